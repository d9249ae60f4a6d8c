// Sampler: one request's logits -> token, applying SamplingParams in vLLM's order:
//   NaN masked -> logit_bias -> repetition/presence/frequency penalties -> greedy argmax if
//   temperature is 0, else temperature -> min_p -> top_k -> top_p -> seeded inverse-CDF draw.
// top_k keeps exactly k tokens (lowest ids among equal logits), so top_k=1 is greedy; HF and vLLM
// keep every token tied with the k-th. Reported logprobs are of the raw logits (vLLM's default
// "raw_logprobs"). Owns the request's Rng; works in a SamplerScratch (its own, or the caller's).
// Not thread-safe: one Sampler per request.
#pragma once

#include <cstdint>
#include <memory>
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
  std::vector<TokenLogprob> top = {};  // params.top_logprobs entries, most likely first
};

// The buffers a draw works in, sized to the vocabulary on first use (about 17 bytes per entry):
// any Sampler may use one, one call at a time, so a server keeps one per batch row instead of one
// per request.
struct SamplerScratch {
  void ensure(size_t vocab);
  std::vector<float> work;          // the processed logits
  std::vector<float> weights;       // exp(l - max) of the row or of ids's candidates
  std::vector<double> block_sums;   // their sums per kWeightBlock
  std::vector<float> values;        // the candidates' logits, gathered in id order
  std::vector<int32_t> ids;         // candidate ids
  std::vector<int32_t> positions;   // ranked positions into ids
  std::vector<int32_t> counts;      // penalty scratch, left zeroed
  std::vector<uint8_t> flags;       // penalty scratch, left zeroed
};

class Sampler {
 public:
  // `params` must be valid (validate()); default_seed is used when params.seed is unset.
  // `isa`: the vocabulary passes' instruction set (the model's: RuntimeOptions::isa).
  Sampler(SamplingParams params, uint64_t default_seed, kernels::Isa isa = kernels::detected_isa());

  // `prompt_tokens` and `output_tokens` feed the penalties (repetition uses both, presence and
  // frequency only the output). Consumes one Rng draw per non-greedy call.
  // The first form uses buffers of this Sampler's own (allocated on first use).
  SampleResult sample(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                      std::span<const int32_t> output_tokens);
  SampleResult sample(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                      std::span<const int32_t> output_tokens, SamplerScratch& scratch);

  // The distribution sample() draws from, as a dense row over the vocabulary: the processed logits
  // (bias, penalties, temperature, min_p, top_k, top_p) normalised over the candidates, 0 elsewhere;
  // greedy puts all the mass on the argmax. All zeros when nothing is finite. Consumes no draw.
  // Speculative decoding verifies stochastic drafts against it (speculative_sampling.h).
  void distribution(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                    std::span<const int32_t> output_tokens, SamplerScratch& scratch, std::span<float> probs);

  // The SampleResult sample() would report had it chosen `token` (its raw logprob and top
  // logprobs when the params ask for them).
  SampleResult describe(std::span<const float> logits, int32_t token, SamplerScratch& scratch) const;

  // One uniform draw in [0, 1) from the request's stream (after seek: keyed by position).
  double next_uniform() { return rng_.next_double(); }

  // Beam search: the out.size() most likely next tokens under log_softmax of the logits after
  // logit_bias and the penalties (no temperature, no filters, no draw), most likely first, lower id
  // on ties; tokens at -inf are left out. Returns how many were written. Consumes no Rng draw.
  size_t top_candidates(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                        std::span<const int32_t> output_tokens, SamplerScratch& scratch,
                        std::span<TokenLogprob> out) const;

  // Restarts the draw stream for output position `position` (0 = the first generated token), so a
  // draw depends only on (seed, position): a request that is preempted and recomputed, or resumed
  // by a fresh Sampler, samples exactly what it would have sampled without interruption.
  void seek(uint64_t position);

  const SamplingParams& params() const { return params_; }

 private:
  // scratch.work = the logits with NaN masked, logit_bias and the penalties applied; returns the
  // NaN count.
  int64_t process(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                  std::span<const int32_t> output_tokens, SamplerScratch& scratch) const;
  // A token from tempered logits: weights over the whole row when no filter applies, else over
  // the candidates select_candidates keeps. kNoToken if nothing is finite.
  int32_t sample_tempered(std::span<const float> logits, SamplerScratch& s);
  // Filters the finite candidates by min_p, top_k, top_p (ranking only as many as needed);
  // returns how many remain: a prefix of s.ids, in increasing id order. max: the largest logit.
  size_t select_candidates(std::span<const float> logits, float max, SamplerScratch& s);
  // s.weights[i] = exp(logit of s.ids[i] - max) for i < count (and s.block_sums); returns their total.
  double candidate_weights(std::span<const float> logits, float max, size_t count, SamplerScratch& s);
  int32_t draw(std::span<const float> logits, float max, size_t count, SamplerScratch& s);
  // process(), then the temperature unless greedy: what sample() draws from, in s.work.
  std::span<float> tempered(std::span<const float> logits, std::span<const int32_t> prompt_tokens,
                             std::span<const int32_t> output_tokens, SamplerScratch& s, int64_t& nan_count) const;

  SamplingParams params_;
  kernels::Isa isa_;
  uint64_t seed_;
  Rng rng_;
  std::unique_ptr<SamplerScratch> own_scratch_;
};

}  // namespace lemma
