// Logit processors and distribution helpers over float spans (one row of vocabulary logits).
// Pure functions; none allocates (callers pass scratch spans); thread-safe on distinct data.
// Conventions: a masked token has logit -inf; NaN never wins (argmax and sorting treat it as -inf).
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "lemma/kernels/isa.h"

namespace lemma {

constexpr int32_t kNoToken = -1;

// Index of the largest logit, lowest id on ties; NaN ignored. kNoToken when every entry is NaN or
// -inf (or the span is empty).
int32_t argmax(std::span<const float> logits, kernels::Isa isa = kernels::detected_isa());

// Replaces NaN with -inf; returns how many there were.
int64_t mask_nan(std::span<float> logits);
// out = logits with NaN replaced by -inf, in one pass; returns how many there were.
int64_t copy_masking_nan(std::span<const float> logits, std::span<float> out, kernels::Isa isa = kernels::detected_isa());

// logits /= temperature (temperature > 0).
void apply_temperature(std::span<float> logits, float temperature, kernels::Isa isa = kernels::detected_isa());

// Adds bias to the listed tokens (OpenAI logit_bias); ids outside the vocabulary are skipped
// (requests are validated at the API boundary).
void apply_logit_bias(std::span<float> logits, std::span<const std::pair<int32_t, float>> bias);

// HF repetition penalty: every distinct token in `prompt_tokens` or `output_tokens` has a positive
// logit divided by `penalty`, a negative one multiplied, once however often (and in however many
// lists) it occurs. `flags` is scratch of the vocabulary's size (left zeroed).
void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> prompt_tokens,
                              std::span<const int32_t> output_tokens, float penalty, std::span<uint8_t> flags);

// OpenAI presence/frequency penalties over generated tokens: logit -= presence * (count > 0) +
// frequency * count. `counts` is scratch of the vocabulary's size (left zeroed).
void apply_presence_frequency(std::span<float> logits, std::span<const int32_t> output_tokens,
                              float presence, float frequency, std::span<int32_t> counts);

// Numerically stable softmax / log-softmax (max subtracted, sum in double). -inf -> 0 / -inf.
// All -inf (or empty): softmax gives zeros, log_softmax -inf. NaN inputs count as -inf.
void softmax(std::span<const float> logits, std::span<float> probs);
void log_softmax(std::span<const float> logits, std::span<float> logprobs);

struct TokenLogprob {
  int32_t token = kNoToken;
  float logprob = 0.0f;
};

// The n most likely tokens under log_softmax(logits), most likely first, lowest id on ties.
// Fills out[0 .. min(n, vocab)); returns that count. `scratch` holds vocab ids.
int64_t top_logprobs(std::span<const float> logits, std::span<TokenLogprob> out, std::span<int32_t> scratch);

}  // namespace lemma
