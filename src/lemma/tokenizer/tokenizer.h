// lemma::Tokenizer: text <-> token ids for byte-level BPE and SentencePiece-style models,
// built as the pipeline tokenizer.json describes (added tokens -> normalizer -> pre-tokenizer
// -> model -> post-processor; decoder for the way back), from tokenizer.json or from GGUF
// tokenizer.ggml.* metadata mapped onto the same pipeline.
// Immutable after load; every const method is thread-safe. Copies share the loaded state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lemma/tokenizer/gguf_metadata.h"
#include "lemma/tokenizer/marked_text.h"
#include "lemma/tokenizer/vocab.h"

namespace lemma {

namespace tok {
struct Pipeline;
}

class Tokenizer {
 public:
  // tokenizer.json (or vocab.json + merges.txt) + optional tokenizer_config.json in `dir`.
  // Throws IoError / FormatError.
  static Tokenizer from_hf_dir(const std::string& dir);
  static Tokenizer from_hf_json(const std::string& tokenizer_json_text,
                                const std::string& tokenizer_config_json_text /* may be empty */);
  // The older GPT-2 file pair (vocab.json + merges.txt, optional tokenizer_config.json);
  // from_hf_dir falls back to it when a directory has no tokenizer.json.
  static Tokenizer from_hf_vocab_merges(const std::string& vocab_json_text, const std::string& merges_txt_text,
                                        const std::string& tokenizer_config_json_text /* may be empty */);
  static Tokenizer from_gguf_metadata(const GgufMetadataLookup& md);

  // add_special: add BOS/EOS as the model's metadata says. parse_special: match control-token
  // text (e.g. "<|im_end|>") in `text`; non-special added tokens are always matched.
  // Invalid UTF-8 in `text` is replaced by U+FFFD first.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // encode(concatenated text, add_special, parse_special = true), except that special-token text
  // is read as a special token only where it lies wholly outside the spans from the request: a
  // user's "<|im_end|>" stays ordinary text. The text is still split only at special tokens and
  // each piece between them is encoded whole, so text without special-token text in request
  // spans gets exactly encode()'s ids. (Normalisers map the marks; see Normalizer::apply_marked.)
  std::vector<int32_t> encode_spans(std::span<const TextSpan> spans, bool add_special) const;
  std::vector<int32_t> encode_marked(const MarkedText& text, bool add_special) const;

  // The most input bytes one token can stand for: a text of B bytes encodes to at least
  // ceil(B / max_token_bytes()) tokens, so an over-long prompt can be refused before it is
  // tokenised. Longest vocabulary/added-token text (at least 4: one unknown character) times the
  // normaliser's largest shrink. 0 when no such bound holds: the pipeline may drop or collapse
  // text without limit (Strip or StripAccents normalisers, regex Replace, pre-tokenizers that
  // remove text, added tokens that swallow whitespace, unknowns that vanish or fuse).
  size_t max_token_bytes() const;
  // Out-of-range ids throw InvalidArgument. Applies transformers' clean_up_tokenization_spaces
  // when tokenizer_config.json asks for it; the overload below decides explicitly.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special, bool clean_up_spaces) const;

  int32_t vocab_size() const;
  std::string_view token_text(int32_t id) const;  // raw vocab string ("" out of range)
  // The bytes token `id` adds to the output in mid-text (byte-level and "<0xXX>" tokens
  // mapped back to bytes, "▁" to a space; no dummy-prefix stripping, no UTF-8 repair), as
  // grammar-constrained sampling needs. Throws InvalidArgument out of range.
  std::string token_bytes(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view text) const;
  TokenType token_type(int32_t id) const;

  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> eot_id() const;
  std::optional<int32_t> pad_id() const;
  std::optional<int32_t> unk_id() const;
  bool adds_bos() const;
  bool adds_eos() const;
  // Ids that end generation: eos, eot and control tokens with well-known end-of-turn texts.
  const std::vector<int32_t>& end_of_generation_ids() const;
  bool is_end_of_generation(int32_t id) const;
  // Control tokens (and the unknown token): dropped by decode(skip_special = true).
  bool is_special(int32_t id) const;
  std::string summary() const;

  // Decoding without the final UTF-8 repair: bytes as the decoder produced them, possibly
  // ending inside a code point. Used by StreamingDetokenizer.
  std::string decode_raw(std::span<const int32_t> ids, bool skip_special) const;

 private:
  explicit Tokenizer(std::shared_ptr<const tok::Pipeline> p) : p_(std::move(p)) {}
  std::string decode_impl(std::span<const int32_t> ids, bool skip_special, bool raw, bool clean_up) const;
  std::vector<int32_t> encode_impl(std::string_view text, std::span<const ByteRange> marks, bool add_special,
                                   bool parse_special) const;

  std::shared_ptr<const tok::Pipeline> p_;
  friend struct tok::Pipeline;
};

}  // namespace lemma
