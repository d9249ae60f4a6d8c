// Normalizers: the first stage of the HF pipeline, rewriting a text segment before it is
// split. Built from tokenizer.json's "normalizer" (or synthesised for GGUF SentencePiece).
// Immutable after construction; apply() is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lemma::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string apply(std::string text) const = 0;
  virtual std::string describe() const = 0;
};

using NormalizerPtr = std::unique_ptr<const Normalizer>;

// null / missing -> nullptr (identity). Throws Unsupported for unknown types.
NormalizerPtr normalizer_from_json(const nlohmann::json& j);

// The SentencePiece space handling: optional "▁" prefix, then " " -> "▁".
NormalizerPtr make_spm_normalizer(bool add_dummy_prefix);

}  // namespace lemma::tok
