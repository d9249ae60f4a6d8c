// The logits of every position of one token sequence, from an empty cache in one forward: what
// `lemma logits` prints and what golden comparisons check. Thread-safe for distinct calls (each
// uses its own cache and workspace).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/model/model.h"

namespace lemma {

// [tokens.size(), vocab] f32, row i = logits after reading tokens[0..i], with a KV cache of
// `kv_dtype`, on the LoRA adapter `lora` when given (G29). Throws InvalidArgument for an empty
// sequence, ids outside the vocabulary or an adapter of another model.
std::vector<float> sequence_logits(const Model& model, std::span<const int32_t> tokens, int num_threads = 1,
                                   KvDtype kv_dtype = KvDtype::kF32, const LoraAdapter* lora = nullptr);

// The same forward (f32 cache, only the last row's logits, which it returns) with `observer` shown
// every layer matmul group's input rows (calibration: quant/gptq.h's Hessians).
std::vector<float> observe_sequence(const Model& model, std::span<const int32_t> tokens, int num_threads,
                                    const LinearInputObserver& observer);

}  // namespace lemma
