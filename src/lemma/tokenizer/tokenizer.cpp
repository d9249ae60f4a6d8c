#include "lemma/tokenizer/tokenizer.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lemma/base/error.h"
#include "lemma/tokenizer/pipeline.h"
#include "lemma/tokenizer/utf8.h"

namespace lemma {
namespace {

// transformers' clean_up_tokenization: removes the spaces BPE decoding leaves before
// punctuation and English contractions.
std::string clean_up_tokenization(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    const std::string f = from, t = to;
    std::string out;
    size_t last = 0, pos;
    while ((pos = s.find(f, last)) != std::string::npos) {
      out.append(s, last, pos - last);
      out += t;
      last = pos + f.size();
    }
    out.append(s, last, std::string::npos);
    s = std::move(out);
  }
  return s;
}

}  // namespace

namespace tok {

void Pipeline::collect_end_of_generation_ids() {
  // The texts chat models use to end a turn (the list llama.cpp also keys on).
  static const char* const kTurnEnds[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
                                          "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>",
                                          "<|end_of_text|>", "<end_of_utterance>"};
  eog.clear();
  if (eos) eog.push_back(*eos);
  if (eot) eog.push_back(*eot);
  for (const char* t : kTurnEnds) {
    if (auto id = vocab.find(t); id && vocab.type(*id) == TokenType::kControl) eog.push_back(*id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
}

void Pipeline::compute_max_token_bytes() {
  max_token_bytes = 0;
  const size_t shrink = normalizer ? normalizer->max_shrink() : 1;
  const bool byte_level = pre_tokenizer && pre_tokenizer->emits_byte_level();
  if (shrink == 0 || (pre_tokenizer && pre_tokenizer->may_drop_text()) || model->may_drop_text(byte_level)) return;
  // A token stands for at most its text's bytes of model input (byte-level text and "▁" only
  // ever spell input bytes with as many bytes or more); an unknown character is at most 4.
  size_t longest = 4;
  for (int32_t id = 0; id < vocab.size(); ++id) longest = std::max(longest, vocab.text(id).size());
  for (const auto& t : added.tokens()) {
    if (t.lstrip || t.rstrip) return;  // swallows any run of whitespace next to it
  }
  longest = std::max(longest, added.longest_match_text());
  max_token_bytes = longest * shrink;
}

}  // namespace tok

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  return encode_impl(text, {}, add_special, parse_special);
}

std::vector<int32_t> Tokenizer::encode_spans(std::span<const TextSpan> spans, bool add_special) const {
  return encode_marked(MarkedText::from_spans(spans), add_special);
}

std::vector<int32_t> Tokenizer::encode_marked(const MarkedText& text, bool add_special) const {
  return encode_impl(text.text(), text.marks(), add_special, /*parse_special=*/true);
}

std::vector<int32_t> Tokenizer::encode_impl(std::string_view text, std::span<const ByteRange> request_marks,
                                            bool add_special, bool parse_special) const {
  const auto& p = *p_;
  std::vector<int32_t> ids;
  if (add_special) ids = p.post.prefix;
  const std::string clean = tok::sanitize_utf8(text);
  std::vector<ByteRange> marks(request_marks.begin(), request_marks.end());
  // Replacement characters moved bytes around: then all of it counts as request text.
  if (!marks.empty() && clean != text) marks = {{0, clean.size()}};
  bool at_start = true;
  for (auto& raw : p.added.split(clean, /*normalized_phase=*/false, parse_special, marks)) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      at_start = false;
      continue;
    }
    std::vector<ByteRange> segment_marks;
    if (!marks.empty()) segment_marks = MarkedText::slice_marks(marks, raw.begin, raw.begin + raw.text.size());
    std::string normalized;
    if (!p.normalizer) normalized = std::move(raw.text);
    else if (segment_marks.empty()) normalized = p.normalizer->apply(std::move(raw.text));
    else normalized = p.normalizer->apply_marked(std::move(raw.text), segment_marks);
    for (auto& seg : p.added.split(normalized, /*normalized_phase=*/true, parse_special, segment_marks)) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
      } else {
        std::vector<std::string> words{std::move(seg.text)};
        if (p.pre_tokenizer) p.pre_tokenizer->apply(words, at_start);
        for (const auto& w : words) p.model->encode_word(w, ids);
      }
      at_start = false;
    }
    at_start = false;
  }
  if (add_special) ids.insert(ids.end(), p.post.suffix.begin(), p.post.suffix.end());
  return ids;
}

size_t Tokenizer::max_token_bytes() const { return p_->max_token_bytes; }

std::string Tokenizer::decode_impl(std::span<const int32_t> ids, bool skip_special, bool raw,
                                   bool clean_up) const {
  const auto& p = *p_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= p.vocab.size()) {
      fail<InvalidArgument>("token id {} is outside the vocabulary (size {})", id, p.vocab.size());
    }
    if (skip_special && is_special(id)) continue;
    tokens.push_back(p.vocab.text(id));
  }
  std::string text;
  if (p.decoder) {
    p.decoder->apply(tokens, raw);
    for (const auto& t : tokens) text += t;
  } else {
    // HF joins the token texts with spaces when tokenizer.json has no decoder.
    for (size_t i = 0; i < tokens.size(); ++i) text += (i ? " " : "") + tokens[i];
  }
  if (raw) return text;
  text = tok::sanitize_utf8(text);
  return clean_up ? clean_up_tokenization(std::move(text)) : text;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return decode_impl(ids, skip_special, false, p_->clean_up_spaces);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special, bool clean_up_spaces) const {
  return decode_impl(ids, skip_special, false, clean_up_spaces);
}

std::string Tokenizer::decode_raw(std::span<const int32_t> ids, bool skip_special) const {
  return decode_impl(ids, skip_special, true, false);
}

int32_t Tokenizer::vocab_size() const { return p_->vocab.size(); }

std::string_view Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= p_->vocab.size()) return {};
  return p_->vocab.text(id);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  const auto& p = *p_;
  if (id < 0 || id >= p.vocab.size()) {
    fail<InvalidArgument>("token id {} is outside the vocabulary (size {})", id, p.vocab.size());
  }
  if (!p.decoder) return p.vocab.text(id);
  // Decoders treat the first token specially (Strip / Metaspace drop its leading space), so
  // decode behind a one-letter sentinel that every decoder passes through unchanged.
  std::vector<std::string> tokens{"a", p.vocab.text(id)};
  p.decoder->apply(tokens, /*raw_bytes=*/true);
  std::string text;
  for (const auto& t : tokens) text += t;
  return text.substr(1);
}

std::optional<int32_t> Tokenizer::token_id(std::string_view text) const { return p_->vocab.find(text); }

TokenType Tokenizer::token_type(int32_t id) const {
  if (id < 0 || id >= p_->vocab.size()) return TokenType::kUnused;
  return p_->vocab.type(id);
}

std::optional<int32_t> Tokenizer::bos_id() const { return p_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return p_->eos; }
std::optional<int32_t> Tokenizer::eot_id() const { return p_->eot; }
std::optional<int32_t> Tokenizer::pad_id() const { return p_->pad; }
std::optional<int32_t> Tokenizer::unk_id() const { return p_->unk; }

bool Tokenizer::adds_bos() const {
  return p_->bos && !p_->post.prefix.empty() && p_->post.prefix.front() == *p_->bos;
}

bool Tokenizer::adds_eos() const {
  return p_->eos && !p_->post.suffix.empty() && p_->post.suffix.back() == *p_->eos;
}

const std::vector<int32_t>& Tokenizer::end_of_generation_ids() const { return p_->eog; }

bool Tokenizer::is_end_of_generation(int32_t id) const {
  return std::binary_search(p_->eog.begin(), p_->eog.end(), id);
}

bool Tokenizer::is_special(int32_t id) const {
  const TokenType t = token_type(id);
  return t == TokenType::kControl || t == TokenType::kUnknown;
}

std::string Tokenizer::summary() const {
  const auto& p = *p_;
  auto id_str = [&](const std::optional<int32_t>& id) {
    return id ? fmt::format("{} '{}'", *id, p.vocab.text(*id)) : std::string("none");
  };
  size_t n_special = 0;
  for (const auto& t : p.added.tokens()) n_special += t.special ? 1 : 0;
  return fmt::format(
      "{} tokenizer from {}: {} tokens ({} added, {} special); model {}; normalizer {}; "
      "pre-tokenizer {}; decoder {}; bos {}, eos {}, eot {}, unk {}, pad {}; adds bos: {}, adds eos: {}; "
      "end-of-generation ids [{}]",
      p.model_kind, p.source, p.vocab.size(), p.added.tokens().size(), n_special, p.model->describe(),
      p.normalizer ? p.normalizer->describe() : "none", p.pre_tokenizer ? p.pre_tokenizer->describe() : "none",
      p.decoder ? p.decoder->describe() : "none", id_str(p.bos), id_str(p.eos), id_str(p.eot), id_str(p.unk),
      id_str(p.pad), adds_bos(), adds_eos(), fmt::join(p.eog, ", "));
}

}  // namespace lemma
