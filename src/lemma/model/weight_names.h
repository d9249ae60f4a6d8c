// The per-format names of a model's tensors: one small map for GGUF (llama.cpp names) and one for
// Hugging Face safetensors. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace lemma {

enum class WeightFormat { kGguf, kHf };

enum class WeightRole {
  kTokenEmbedding, kFinalNorm, kLmHead,
  kAttnNorm, kQ, kK, kV, kO, kQBias, kKBias, kVBias, kQNorm, kKNorm,
  kFfnNorm, kGate, kUp, kDown,
};

// `layer` is ignored for the global roles. E.g. (kGguf, kQ, 3) -> "blk.3.attn_q.weight",
// (kHf, kQ, 3) -> "model.layers.3.self_attn.q_proj.weight".
std::string weight_name(WeightFormat format, WeightRole role, int64_t layer = 0);
const char* to_string(WeightFormat format);

}  // namespace lemma
