// Greedy decoding of one sequence: prefill the prompt in one forward, then one token per forward
// with the KV cache; next token = argmax (lowest id on ties), as llama.cpp's greedy sampler. A small
// driver for tests, `lemma logits`-style tools and golden comparisons; real serving goes through
// the engine. Thread-safe for distinct calls.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lemma/model/model.h"

namespace lemma {

// The greedy next token: the largest logit, the lowest id on ties (NaN counts as -inf).
int32_t greedy_token(std::span<const float> logits);

// Returns the `num_new` generated ids (the prompt is not repeated). Stops early after
// `stop_token` when given; on the LoRA adapter `lora` when given (G29). Throws InvalidArgument for
// an empty prompt.
std::vector<int32_t> generate_greedy(const Model& model, std::span<const int32_t> prompt, int64_t num_new,
                                     std::optional<int32_t> stop_token = std::nullopt, int num_threads = 1,
                                     const LoraAdapter* lora = nullptr);

}  // namespace lemma
