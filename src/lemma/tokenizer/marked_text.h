// Text that knows which of its bytes came from the request (chat message contents, tool
// definitions) and which from trusted sources (the chat template's own text). Only trusted bytes
// may become special tokens: a user who writes "<|im_end|>" gets those characters, not a forged
// turn. Shared by the Jinja interpreter (which produces it) and the tokenizer (which honours it).
// Plain values; header-only so that lemma_jinja needs no link dependency on lemma_tokenizer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lemma {

// One piece of a rendered prompt: text and whether it came from the request.
struct TextSpan {
  std::string text;
  bool from_request = false;
  bool operator==(const TextSpan&) const = default;
};

// Bytes [begin, end) of some string.
struct ByteRange {
  size_t begin = 0;
  size_t end = 0;
  bool operator==(const ByteRange&) const = default;
};

// A string plus the byte ranges that came from the request ("marked"). The ranges are sorted,
// non-empty, disjoint and never touch (touching ranges are merged).
class MarkedText {
 public:
  MarkedText() = default;
  explicit MarkedText(std::string text, bool from_request = false) : text_(std::move(text)) {
    if (from_request && !text_.empty()) marks_.push_back({0, text_.size()});
  }
  static MarkedText from_spans(std::span<const TextSpan> spans) {
    MarkedText out;
    for (const auto& s : spans) out.append(s.text, s.from_request);
    return out;
  }

  const std::string& text() const { return text_; }
  const std::vector<ByteRange>& marks() const { return marks_; }
  size_t size() const { return text_.size(); }
  bool has_marks() const { return !marks_.empty(); }

  void append(std::string_view s, bool from_request) {
    const size_t at = text_.size();
    text_ += s;
    if (from_request) add_mark(at, text_.size());
  }
  // Appends `s` whose own marks (relative to s) are `marks`.
  void append(std::string_view s, std::span<const ByteRange> marks) {
    const size_t at = text_.size();
    text_ += s;
    for (const auto& r : marks) add_mark(at + r.begin, at + r.end);
  }
  // Appends bytes [begin, end) of `s` whose own marks are `marks`.
  void append_slice(std::string_view s, std::span<const ByteRange> marks, size_t begin, size_t end) {
    const size_t at = text_.size();
    text_.append(s.substr(begin, end - begin));
    for (const auto& r : slice_marks(marks, begin, end)) add_mark(at + r.begin, at + r.end);
  }
  // Maximal runs of equally marked bytes, in order (empty text: no spans).
  std::vector<TextSpan> spans() const {
    std::vector<TextSpan> out;
    size_t pos = 0;
    for (const auto& r : marks_) {
      if (r.begin > pos) out.push_back({text_.substr(pos, r.begin - pos), false});
      out.push_back({text_.substr(r.begin, r.end - r.begin), true});
      pos = r.end;
    }
    if (pos < text_.size()) out.push_back({text_.substr(pos), false});
    return out;
  }

  std::string take_text() && { return std::move(text_); }

  // The marks of bytes [begin, end), relative to begin.
  static std::vector<ByteRange> slice_marks(std::span<const ByteRange> marks, size_t begin, size_t end) {
    std::vector<ByteRange> out;
    auto it = std::upper_bound(marks.begin(), marks.end(), begin, [](size_t p, const ByteRange& r) { return p < r.end; });
    for (; it != marks.end() && it->begin < end; ++it) {
      out.push_back({std::max(it->begin, begin) - begin, std::min(it->end, end) - begin});
    }
    return out;
  }
  static bool overlaps(std::span<const ByteRange> marks, size_t begin, size_t end) {
    if (begin >= end) return false;
    auto it = std::upper_bound(marks.begin(), marks.end(), begin, [](size_t p, const ByteRange& r) { return p < r.end; });
    return it != marks.end() && it->begin < end;
  }

 private:
  // Adds a range that starts at or after every existing one.
  void add_mark(size_t begin, size_t end) {
    if (begin < end) push_merged(marks_, {begin, end});
  }
  static void push_merged(std::vector<ByteRange>& v, ByteRange r) {
    if (!v.empty() && r.begin <= v.back().end) {
      v.back().end = std::max(v.back().end, r.end);
    } else {
      v.push_back(r);
    }
  }

  std::string text_;
  std::vector<ByteRange> marks_;
};

}  // namespace lemma
