// SamplingParams: how one request turns logits into its next token (OpenAI/vLLM semantics).
// Plain data, copyable; validate() is the boundary check (throws InvalidArgument naming the field).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace lemma {

namespace grammar {
struct TokenConstraint;
}  // namespace grammar

// Beam search (G12): keep the `width` best continuations of the request instead of sampling one
// token. HF/vLLM semantics; the engine (engine/beam_search.h) runs the search, the runner ranks
// each beam's row (Sampler::top_candidates).
enum class EarlyStopping : uint8_t {
  kHeuristic,  // HF early_stopping=False: stop once `width` hypotheses are finished and the best live
               // beam, scored at its current length, does not beat the worst of them
  kWhenFull,   // HF early_stopping=True: stop as soon as `width` hypotheses are finished
  kNever,      // HF "never": stop only when no live beam can still beat the worst finished one
               // (an exact bound: log-probabilities only fall as a beam grows)
};

struct BeamSearchParams {
  int32_t width = 1;            // W >= 1 live beams (vLLM's best_of with use_beam_search)
  float length_penalty = 1.0f;  // a finished hypothesis scores cum_logprob / generated_len^length_penalty
  EarlyStopping early_stopping = EarlyStopping::kHeuristic;

  static constexpr int32_t kMaxWidth = 256;
};

struct SamplingParams {
  float temperature = 1.0f;         // 0 (below 1e-5) = greedy
  int32_t top_k = 0;                // <= 0: disabled
  float top_p = 1.0f;               // (0, 1]; 1: disabled
  float min_p = 0.0f;               // [0, 1]; 0: disabled
  float repetition_penalty = 1.0f;  // > 0; 1: disabled (prompt and output tokens)
  float presence_penalty = 0.0f;    // [-2, 2] (output tokens)
  float frequency_penalty = 0.0f;   // [-2, 2] (output tokens)
  std::vector<std::pair<int32_t, float>> logit_bias = {};  // token -> added logit
  std::optional<uint64_t> seed = {};  // unset: the sampler's default seed
  bool logprobs = false;            // report the sampled token's raw logprob (OpenAI `logprobs`)
  int32_t top_logprobs = 0;         // also the n most likely raw logprobs (needs logprobs)
  // Structured output: only tokens the grammar allows are sampled (grammar/token_constraint.h);
  // null: unconstrained. Shared, immutable.
  std::shared_ptr<const grammar::TokenConstraint> constraint = {};
  // Set: beam search. Ranking is by log-probability after logit_bias, the penalties and the
  // constraint; temperature, top_k, top_p, min_p and seed do not apply (the search is deterministic).
  std::optional<BeamSearchParams> beam_search = {};

  bool is_greedy() const { return temperature < kGreedyTemperature; }
  // Throws InvalidArgument for values outside the ranges above, non-finite values, or
  // logit_bias ids outside [0, vocab_size) (vocab_size <= 0 skips that check), or a beam width
  // outside [1, kMaxWidth] or a non-finite length_penalty.
  void validate(int64_t vocab_size = 0) const;

  static constexpr float kGreedyTemperature = 1e-5f;
};

}  // namespace lemma
