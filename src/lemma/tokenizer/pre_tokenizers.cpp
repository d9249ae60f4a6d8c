#include "lemma/tokenizer/pre_tokenizers.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/tokenizer/byte_level.h"
#include "lemma/tokenizer/regex.h"

namespace lemma::tok {

const char* const kGpt2SplitRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

using json = nlohmann::json;

struct Span {
  size_t begin, end;
  bool matched;
};

// Splits `piece` at the regex matches according to HF's SplitDelimiterBehavior.
void split_piece(const Regex& re, const std::string& piece, SplitBehavior behavior, bool invert,
                 std::vector<std::string>& out) {
  std::vector<Span> spans;
  size_t last = 0;
  for (auto [b, e] : re.find_all(piece)) {
    if (b > last) spans.push_back({last, b, false});
    if (e > b) spans.push_back({b, e, true});
    last = std::max(last, e);
  }
  if (last < piece.size()) spans.push_back({last, piece.size(), false});
  if (invert) {
    for (auto& s : spans) s.matched = !s.matched;
  }
  auto text = [&](const Span& s) { return piece.substr(s.begin, s.end - s.begin); };
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const auto& s : spans) {
        if (!s.matched) out.push_back(text(s));
      }
      break;
    case SplitBehavior::kIsolated:
      for (const auto& s : spans) out.push_back(text(s));
      break;
    case SplitBehavior::kMergedWithPrevious: {
      std::string cur;
      for (const auto& s : spans) {
        cur += text(s);
        if (s.matched) {
          out.push_back(std::move(cur));
          cur.clear();
        }
      }
      if (!cur.empty()) out.push_back(std::move(cur));
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      std::string cur;
      for (const auto& s : spans) {
        if (s.matched && !cur.empty()) {
          out.push_back(std::move(cur));
          cur.clear();
        }
        cur += text(s);
      }
      if (!cur.empty()) out.push_back(std::move(cur));
      break;
    }
    case SplitBehavior::kContiguous: {
      std::string cur;
      bool cur_matched = false;
      for (const auto& s : spans) {
        if (!cur.empty() && !(s.matched && cur_matched)) {
          out.push_back(std::move(cur));
          cur.clear();
        }
        cur += text(s);
        cur_matched = s.matched;
      }
      if (!cur.empty()) out.push_back(std::move(cur));
      break;
    }
  }
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(const std::string& pattern, bool literal, SplitBehavior behavior, bool invert)
      : re_(pattern, literal), behavior_(behavior), invert_(invert) {}
  void apply(std::vector<std::string>& pieces, bool) const override {
    std::vector<std::string> out;
    out.reserve(pieces.size() * 2);
    for (const auto& p : pieces) split_piece(re_, p, behavior_, invert_, out);
    pieces = std::move(out);
  }
  std::string describe() const override {
    // Long patterns are shortened (at a UTF-8 boundary) to keep summaries to one paragraph.
    const std::string& pat = re_.pattern();
    if (pat.size() <= 40) return "Split(" + pat + ")";
    size_t cut = 40;
    while (cut > 0 && (static_cast<unsigned char>(pat[cut]) & 0xC0) == 0x80) --cut;
    return "Split(" + pat.substr(0, cut) + "...)";
  }
  bool may_drop_text() const override { return behavior_ == SplitBehavior::kRemoved; }

 private:
  Regex re_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) re_ = std::make_unique<Regex>(kGpt2SplitRegex);
  }
  void apply(std::vector<std::string>& pieces, bool) const override {
    std::vector<std::string> out;
    for (auto& p : pieces) {
      if (add_prefix_space_ && !p.empty() && p[0] != ' ') p.insert(p.begin(), ' ');
      if (re_) {
        split_piece(*re_, p, SplitBehavior::kIsolated, false, out);
      } else {
        out.push_back(std::move(p));
      }
    }
    for (auto& p : out) p = byte_level_encode(p);
    pieces = std::move(out);
  }
  std::string describe() const override { return re_ ? "ByteLevel(gpt2 regex)" : "ByteLevel"; }
  bool may_drop_text() const override { return false; }
  bool emits_byte_level() const override { return true; }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> re_;
};

// SentencePiece's space handling as a pre-tokenizer: " " -> replacement, optional prefix,
// optional split before each replacement char.
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, std::string scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(std::move(scheme)), split_(split),
        re_(replacement_, true) {}
  void apply(std::vector<std::string>& pieces, bool at_text_start) const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string p;
      for (char c : pieces[i]) {
        if (c == ' ') p += replacement_; else p += c;
      }
      const bool prepend = scheme_ == "always" || (scheme_ == "first" && i == 0 && at_text_start);
      if (prepend && p.compare(0, replacement_.size(), replacement_) != 0) p = replacement_ + p;
      if (split_) {
        split_piece(re_, p, SplitBehavior::kMergedWithNext, false, out);
      } else {
        out.push_back(std::move(p));
      }
    }
    pieces = std::move(out);
  }
  std::string describe() const override { return "Metaspace"; }
  bool may_drop_text() const override { return false; }

 private:
  std::string replacement_, scheme_;
  bool split_;
  Regex re_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<PreTokenizerPtr> steps) : steps_(std::move(steps)) {}
  void apply(std::vector<std::string>& pieces, bool at_text_start) const override {
    for (const auto& s : steps_) s->apply(pieces, at_text_start);
  }
  std::string describe() const override {
    std::string d = "Sequence[";
    for (size_t i = 0; i < steps_.size(); ++i) d += (i ? ", " : "") + steps_[i]->describe();
    return d + "]";
  }
  bool may_drop_text() const override {
    return std::any_of(steps_.begin(), steps_.end(), [](const auto& s) { return s->may_drop_text(); });
  }
  // Later steps (splits) only cut byte-level text into smaller pieces.
  bool emits_byte_level() const override {
    return std::any_of(steps_.begin(), steps_.end(), [](const auto& s) { return s->emits_byte_level(); });
  }

 private:
  std::vector<PreTokenizerPtr> steps_;
};

SplitBehavior behavior_from(const std::string& s) {
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  fail<Unsupported>("tokenizer.json split behavior '{}' is not supported", s);
}

}  // namespace

PreTokenizerPtr make_split(const std::string& pattern, bool literal, SplitBehavior behavior,
                           bool invert) {
  return std::make_unique<SplitPreTokenizer>(pattern, literal, behavior, invert);
}

PreTokenizerPtr make_byte_level(bool add_prefix_space, bool use_regex) {
  return std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, use_regex);
}

PreTokenizerPtr make_sequence(std::vector<PreTokenizerPtr> steps) {
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

PreTokenizerPtr pre_tokenizer_from_json(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string type = j.value("type", "");
  if (type == "Sequence") {
    std::vector<PreTokenizerPtr> steps;
    for (const auto& s : j.at("pretokenizers")) {
      if (auto p = pre_tokenizer_from_json(s)) steps.push_back(std::move(p));
    }
    return make_sequence(std::move(steps));
  }
  if (type == "ByteLevel") {
    return make_byte_level(j.value("add_prefix_space", true), j.value("use_regex", true));
  }
  if (type == "Split") {
    const auto& p = j.at("pattern");
    const bool literal = p.contains("String");
    const std::string pattern = literal ? p.at("String").get<std::string>() : p.at("Regex").get<std::string>();
    return make_split(pattern, literal, behavior_from(j.value("behavior", "Isolated")), j.value("invert", false));
  }
  if (type == "Metaspace") {
    std::string scheme = j.value("prepend_scheme", "");
    if (scheme.empty()) scheme = j.value("add_prefix_space", true) ? "always" : "never";
    return std::make_unique<MetaspacePreTokenizer>(j.value("replacement", "\u2581"), scheme,
                                                   j.value("split", true));
  }
  if (type == "Digits") {
    const bool individual = j.value("individual_digits", false);
    return make_split(individual ? R"(\p{N})" : R"(\p{N}+)", false, SplitBehavior::kIsolated, false);
  }
  if (type == "Whitespace") return make_split(R"(\w+|[^\w\s]+)", false, SplitBehavior::kRemoved, true);
  if (type == "WhitespaceSplit") return make_split(R"(\s+)", false, SplitBehavior::kRemoved, false);
  if (type == "Punctuation") {
    return make_split(R"([\p{P}!-/:-@\[-`{-~])", false, behavior_from(j.value("behavior", "Isolated")), false);
  }
  fail<Unsupported>("tokenizer.json pre_tokenizer type '{}' is not supported", type);
}

}  // namespace lemma::tok
