// Normalizers: the first stage of the HF pipeline, rewriting a text segment before it is
// split. Built from tokenizer.json's "normalizer" (or synthesised for GGUF SentencePiece).
// Immutable after construction; apply() is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lemma/tokenizer/marked_text.h"

namespace lemma::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string apply(std::string text) const = 0;
  virtual std::string describe() const = 0;

  // apply() on a text whose bytes `marks` came from the request; `marks` becomes the output's.
  // The default normalises each run of equally marked bytes on its own: when the runs' outputs
  // join to apply(text), each output run keeps its input run's mark (so unmarked output is a
  // function of unmarked input alone); otherwise (the normaliser worked across a run boundary)
  // the whole output is marked. Position-dependent normalisers (Prepend, Strip, Sequence) map
  // the marks themselves.
  virtual std::string apply_marked(std::string text, std::vector<ByteRange>& marks) const;

  // The factor by which output may be shorter than input (output bytes >= input bytes / factor),
  // for Tokenizer::max_token_bytes(); 0 when the output may shrink without bound.
  virtual size_t max_shrink() const { return 0; }
};

using NormalizerPtr = std::unique_ptr<const Normalizer>;

// null / missing -> nullptr (identity). Throws Unsupported for unknown types.
NormalizerPtr normalizer_from_json(const nlohmann::json& j);

// The SentencePiece space handling: optional "▁" prefix, then " " -> "▁".
NormalizerPtr make_spm_normalizer(bool add_dummy_prefix);

}  // namespace lemma::tok
