// Sampler: one request's logits -> token, applying SamplingParams in vLLM's order:
//   NaN masked -> logit_bias -> repetition/presence/frequency penalties -> greedy argmax if
//   temperature is 0, else temperature -> min_p -> top_k -> top_p -> seeded inverse-CDF draw.
// top_k keeps exactly k tokens (lowest ids among equal logits), so top_k=1 is greedy; HF and vLLM
// keep every token tied with the k-th. Reported logprobs are of the raw logits (vLLM's default
// "raw_logprobs"). Owns scratch buffers sized to the vocabulary on first use (no allocation per
// step afterwards) and the request's Rng.
// Not thread-safe: one Sampler per request.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/sampling/logit_ops.h"
#include "lemma/sampling/rng.h"
#include "lemma/sampling/sampling_params.h"

namespace lemma {

struct SampleResult {
  int32_t token = kNoToken;  // kNoToken: no finite logit remained (every logit NaN or -inf)
  float logprob = 0.0f;      // raw log-softmax of `token` when params.logprobs (-inf for kNoToken),
                             // else NaN (not computed: it costs a pass of exp over the vocabulary)
  int64_t nan_count = 0;     // NaN logits seen (they are never sampled)
  std::vector<TokenLogprob> top;  // params.top_logprobs entries, most likely first
};

class Sampler {
 public:
  // `params` must be valid (validate()); default_seed is used when params.seed is unset.
  Sampler(SamplingParams params, uint64_t default_seed);

  // `prompt_tokens` and `output_tokens` feed the penalties (repetition uses both, presence and
  // frequency only the output). Consumes one Rng draw per non-greedy call.
  SampleResult sample(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                      std::span<const int32_t> output_tokens);

  // Restarts the draw stream for output position `position` (0 = the first generated token), so a
  // draw depends only on (seed, position): a request that is preempted and recomputed, or resumed
  // by a fresh Sampler, samples exactly what it would have sampled without interruption.
  void seek(uint64_t position);

  const SamplingParams& params() const { return params_; }

 private:
  void ensure_scratch(size_t vocab);
  // Filters the finite candidates by min_p, top_k, top_p (sorting only as much as needed);
  // returns how many remain: a prefix of ids_, in increasing id order.
  size_t select_candidates(std::span<const float> logits);
  int32_t draw(std::span<const float> logits, size_t count);

  SamplingParams params_;
  uint64_t seed_;
  Rng rng_;
  std::vector<float> work_;
  std::vector<int32_t> ids_;
  std::vector<int32_t> counts_;
  std::vector<uint8_t> flags_;
  std::vector<double> weights_;
};

}  // namespace lemma
