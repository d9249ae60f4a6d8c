// Decoders: turn token texts back into text (HF "decoder"; synthesised for GGUF models).
// They work on a list of per-token strings, as HF's decode_chain does, because some steps
// (Strip, Metaspace) act per token. Immutable; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lemma::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // `raw_bytes`: keep incomplete/invalid UTF-8 bytes as they are (the streaming detokenizer
  // needs them); otherwise behave exactly like HF, which replaces them with U+FFFD.
  virtual void apply(std::vector<std::string>& tokens, bool raw_bytes) const = 0;
  virtual std::string describe() const = 0;
};

using DecoderPtr = std::unique_ptr<const Decoder>;

DecoderPtr decoder_from_json(const nlohmann::json& j);  // null -> nullptr (concatenate)
DecoderPtr make_byte_level_decoder();
// SentencePiece: "▁" -> " ", byte tokens -> bytes, join, and drop the dummy-prefix space.
DecoderPtr make_spm_decoder(bool strip_leading_space);

}  // namespace lemma::tok
