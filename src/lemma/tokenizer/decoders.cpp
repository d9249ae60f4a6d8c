#include "lemma/tokenizer/decoders.h"

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/tokenizer/byte_level.h"
#include "lemma/tokenizer/utf8.h"
#include "lemma/tokenizer/vocab.h"

namespace lemma::tok {
namespace {

using json = nlohmann::json;

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  size_t last = 0, pos;
  while ((pos = s.find(from, last)) != std::string::npos) {
    out.append(s, last, pos - last);
    out += to;
    last = pos + from.size();
  }
  out.append(s, last, std::string::npos);
  s = std::move(out);
}

class ByteLevelDecoder final : public Decoder {
 public:
  void apply(std::vector<std::string>& tokens, bool raw_bytes) const override {
    std::string joined;
    for (const auto& t : tokens) joined += byte_level_decode(t);
    tokens.assign(1, raw_bytes ? joined : sanitize_utf8(joined));
  }
  std::string describe() const override { return "ByteLevel"; }
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  void apply(std::vector<std::string>& tokens, bool) const override {
    for (auto& t : tokens) replace_all(t, from_, to_);
  }
  std::string describe() const override { return "Replace"; }

 private:
  std::string from_, to_;
};

// Runs of "<0xXX>" tokens become the bytes they name; HF turns a run that is not valid UTF-8
// into one U+FFFD per byte.
class ByteFallbackDecoder final : public Decoder {
 public:
  void apply(std::vector<std::string>& tokens, bool raw_bytes) const override {
    std::vector<std::string> out;
    std::string run;
    size_t run_len = 0;
    auto flush = [&] {
      if (run_len == 0) return;
      if (raw_bytes || sanitize_utf8(run) == run) {
        out.push_back(run);
      } else {
        std::string repl;
        for (size_t i = 0; i < run_len; ++i) repl += "\xEF\xBF\xBD";
        out.push_back(repl);
      }
      run.clear();
      run_len = 0;
    };
    for (auto& t : tokens) {
      if (auto b = parse_byte_token(t)) {
        run += static_cast<char>(*b);
        ++run_len;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
  std::string describe() const override { return "ByteFallback"; }
};

class FuseDecoder final : public Decoder {
 public:
  void apply(std::vector<std::string>& tokens, bool) const override {
    std::string joined;
    for (const auto& t : tokens) joined += t;
    tokens.assign(1, joined);
  }
  std::string describe() const override { return "Fuse"; }
};

// Per token: remove up to `start` leading and `stop` trailing copies of `content`.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void apply(std::vector<std::string>& tokens, bool) const override {
    if (content_.empty()) return;
    for (auto& t : tokens) {
      size_t b = 0, e = t.size();
      for (size_t i = 0; i < start_ && e - b >= content_.size() && t.compare(b, content_.size(), content_) == 0; ++i) {
        b += content_.size();
      }
      for (size_t i = 0; i < stop_ && e - b >= content_.size() &&
                         t.compare(e - content_.size(), content_.size(), content_) == 0; ++i) {
        e -= content_.size();
      }
      t = t.substr(b, e - b);
    }
  }
  std::string describe() const override { return "Strip"; }

 private:
  std::string content_;
  size_t start_, stop_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool prepend)
      : replacement_(std::move(replacement)), prepend_(prepend) {}
  void apply(std::vector<std::string>& tokens, bool) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      replace_all(tokens[i], replacement_, " ");
      if (i == 0 && prepend_ && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
    }
  }
  std::string describe() const override { return "Metaspace"; }

 private:
  std::string replacement_;
  bool prepend_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<DecoderPtr> steps) : steps_(std::move(steps)) {}
  void apply(std::vector<std::string>& tokens, bool raw_bytes) const override {
    for (const auto& s : steps_) s->apply(tokens, raw_bytes);
  }
  std::string describe() const override {
    std::string d = "Sequence[";
    for (size_t i = 0; i < steps_.size(); ++i) d += (i ? "," : "") + steps_[i]->describe();
    return d + "]";
  }

 private:
  std::vector<DecoderPtr> steps_;
};

}  // namespace

DecoderPtr make_byte_level_decoder() { return std::make_unique<ByteLevelDecoder>(); }

DecoderPtr make_spm_decoder(bool strip_leading_space) {
  std::vector<DecoderPtr> steps;
  steps.push_back(std::make_unique<ReplaceDecoder>("\u2581", " "));
  steps.push_back(std::make_unique<ByteFallbackDecoder>());
  steps.push_back(std::make_unique<FuseDecoder>());
  if (strip_leading_space) steps.push_back(std::make_unique<StripDecoder>(" ", 1, 0));
  return std::make_unique<SequenceDecoder>(std::move(steps));
}

DecoderPtr decoder_from_json(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string type = j.value("type", "");
  if (type == "Sequence") {
    std::vector<DecoderPtr> steps;
    for (const auto& s : j.at("decoders")) {
      if (auto d = decoder_from_json(s)) steps.push_back(std::move(d));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  if (type == "ByteLevel") return make_byte_level_decoder();
  if (type == "Replace") {
    const auto& p = j.at("pattern");
    if (!p.contains("String")) fail<Unsupported>("tokenizer.json Replace decoder with a regex pattern is not supported");
    return std::make_unique<ReplaceDecoder>(p.at("String").get<std::string>(), j.at("content").get<std::string>());
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(j.value("content", " "), j.value("start", 0), j.value("stop", 0));
  }
  if (type == "Metaspace") {
    std::string scheme = j.value("prepend_scheme", "");
    const bool prepend = scheme.empty() ? j.value("add_prefix_space", true) : scheme != "never";
    return std::make_unique<MetaspaceDecoder>(j.value("replacement", "\u2581"), prepend);
  }
  fail<Unsupported>("tokenizer.json decoder type '{}' is not supported", type);
}

}  // namespace lemma::tok
