#include "lemma/tokenizer/normalizers.h"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <utf8proc.h>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/tokenizer/regex.h"
#include "lemma/tokenizer/utf8.h"

namespace lemma::tok {
namespace {

using json = nlohmann::json;

// One Unicode code point can normalise to a single byte from up to four (NFKC: U+1D400 -> "A",
// Lowercase: U+212A KELVIN SIGN -> "k"), and composition joins a starter with at most a few
// combining marks of two bytes or more into a character of two bytes or more (NFKC of U+1D414
// U+0308 U+0304, 8 bytes, is U+01D5, 2 bytes): four bytes in per byte out bounds both.
constexpr size_t kUnicodeMaxShrink = 4;

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<NormalizerPtr> steps) : steps_(std::move(steps)) {}
  std::string apply(std::string text) const override {
    for (const auto& s : steps_) text = s->apply(std::move(text));
    return text;
  }
  std::string apply_marked(std::string text, std::vector<ByteRange>& marks) const override {
    for (const auto& s : steps_) text = s->apply_marked(std::move(text), marks);
    return text;
  }
  size_t max_shrink() const override {
    size_t factor = 1;
    for (const auto& s : steps_) {
      if (s->max_shrink() == 0) return 0;
      factor *= s->max_shrink();
    }
    return factor;
  }
  std::string describe() const override {
    std::string d = "Sequence[";
    for (size_t i = 0; i < steps_.size(); ++i) d += (i ? "," : "") + steps_[i]->describe();
    return d + "]";
  }

 private:
  std::vector<NormalizerPtr> steps_;
};

// Unicode normalisation forms through utf8proc.
class UnicodeNormalizer final : public Normalizer {
 public:
  UnicodeNormalizer(std::string name, int options) : name_(std::move(name)), options_(options) {}
  std::string apply(std::string text) const override {
    if (text.empty()) return text;
    utf8proc_uint8_t* out = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                static_cast<utf8proc_ssize_t>(text.size()), &out,
                                static_cast<utf8proc_option_t>(options_));
    if (n < 0) return text;  // invalid UTF-8 cannot reach here (encode sanitises input)
    std::string result(reinterpret_cast<char*>(out), static_cast<size_t>(n));
    free(out);
    return result;
  }
  std::string describe() const override { return name_; }
  size_t max_shrink() const override { return kUnicodeMaxShrink; }

 private:
  std::string name_;
  int options_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  std::string apply(std::string text) const override {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) append_utf8(out, utf8proc_tolower(next_code_point(text, pos)));
    return out;
  }
  std::string describe() const override { return "Lowercase"; }
  size_t max_shrink() const override { return kUnicodeMaxShrink; }
};

// HF Prepend leaves an empty segment empty (so "" encodes to no tokens).
class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string apply(std::string text) const override {
    return text.empty() ? text : prefix_ + text;
  }
  std::string apply_marked(std::string text, std::vector<ByteRange>& marks) const override {
    if (text.empty()) return text;
    for (auto& r : marks) {
      r.begin += prefix_.size();
      r.end += prefix_.size();
    }
    return prefix_ + text;
  }
  size_t max_shrink() const override { return 1; }
  std::string describe() const override { return "Prepend(" + prefix_ + ")"; }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(const std::string& pattern, bool literal, std::string content)
      : regex_(pattern, literal), content_(std::move(content)) {
    // A literal pattern of p bytes becomes content_ (c bytes): shrink at most ceil(p / c); a
    // regex may match any length.
    if (literal && !content_.empty()) shrink_ = std::max<size_t>(1, (pattern.size() + content_.size() - 1) / content_.size());
  }
  size_t max_shrink() const override { return shrink_; }
  std::string apply(std::string text) const override {
    std::string out;
    size_t last = 0;
    for (auto [b, e] : regex_.find_all(text)) {
      if (e == b) continue;
      out.append(text, last, b - last);
      out += content_;
      last = e;
    }
    out.append(text, last, std::string::npos);
    return out;
  }
  std::string describe() const override { return "Replace"; }

 private:
  Regex regex_;
  std::string content_;
  size_t shrink_ = 0;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string apply(std::string text) const override {
    auto [b, e] = bounds(text);
    return text.substr(b, e - b);
  }
  std::string apply_marked(std::string text, std::vector<ByteRange>& marks) const override {
    auto [b, e] = bounds(text);
    marks = MarkedText::slice_marks(marks, b, e);
    return text.substr(b, e - b);
  }
  std::string describe() const override { return "Strip"; }

 private:
  // The bytes [b, e) that stripping keeps.
  std::pair<size_t, size_t> bounds(const std::string& text) const {
    size_t b = 0, e = text.size();
    auto is_ws = [](char32_t c) {
      const auto cat = utf8proc_category(c);
      return c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
             cat == UTF8PROC_CATEGORY_ZS;
    };
    if (left_) {
      while (b < e) {
        size_t p = b;
        if (!is_ws(next_code_point(text, p))) break;
        b = p;
      }
    }
    if (right_) {
      while (e > b) {
        size_t s = e - 1;
        while (s > b && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
        size_t p = s;
        if (!is_ws(next_code_point(text, p))) break;
        e = s;
      }
    }
    return {b, e};
  }

  bool left_, right_;
};

// Removes combining marks (category Mn); HF pairs it with NFD.
class StripAccentsNormalizer final : public Normalizer {
 public:
  std::string apply(std::string text) const override {
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
      const char32_t cp = next_code_point(text, pos);
      if (utf8proc_category(cp) != UTF8PROC_CATEGORY_MN) append_utf8(out, cp);
    }
    return out;
  }
  std::string describe() const override { return "StripAccents"; }
};

// Precompiled SentencePiece charsmaps are not interpreted; they are mostly NFKC-like, which is
// what we apply, with a warning, so such tokenizers still load.
NormalizerPtr precompiled_fallback() {
  log().warn("tokenizer: Precompiled normalizer approximated by NFKC");
  return std::make_unique<UnicodeNormalizer>("NFKC(Precompiled)", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
}

}  // namespace

std::string Normalizer::apply_marked(std::string text, std::vector<ByteRange>& marks) const {
  if (marks.empty()) return apply(std::move(text));
  MarkedText input;
  input.append(text, marks);
  MarkedText pieces;
  for (auto& run : input.spans()) pieces.append(apply(std::move(run.text)), run.from_request);
  std::string whole = apply(std::move(text));
  if (pieces.text() == whole) {
    marks = pieces.marks();
  } else {
    marks.clear();
    if (!whole.empty()) marks.push_back({0, whole.size()});
  }
  return whole;
}

NormalizerPtr normalizer_from_json(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string type = j.value("type", "");
  if (type == "Sequence") {
    std::vector<NormalizerPtr> steps;
    for (const auto& s : j.at("normalizers")) {
      if (auto n = normalizer_from_json(s)) steps.push_back(std::move(n));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>("NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>("NFD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>("NFKC", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>("NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(j.at("prepend").get<std::string>());
  if (type == "Replace") {
    const auto& p = j.at("pattern");
    const bool literal = p.contains("String");
    const std::string pattern = literal ? p.at("String").get<std::string>() : p.at("Regex").get<std::string>();
    return std::make_unique<ReplaceNormalizer>(pattern, literal, j.at("content").get<std::string>());
  }
  if (type == "Strip") return std::make_unique<StripNormalizer>(j.value("strip_left", true), j.value("strip_right", true));
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Precompiled") return precompiled_fallback();
  fail<Unsupported>("tokenizer.json normalizer type '{}' is not supported", type);
}

NormalizerPtr make_spm_normalizer(bool add_dummy_prefix) {
  std::vector<NormalizerPtr> steps;
  if (add_dummy_prefix) steps.push_back(std::make_unique<PrependNormalizer>("\u2581"));
  steps.push_back(std::make_unique<ReplaceNormalizer>(" ", true, "\u2581"));
  return std::make_unique<SequenceNormalizer>(std::move(steps));
}

}  // namespace lemma::tok
