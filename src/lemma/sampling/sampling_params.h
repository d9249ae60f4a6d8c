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

struct SamplingParams {
  float temperature = 1.0f;         // 0 (below 1e-5) = greedy
  int32_t top_k = 0;                // <= 0: disabled
  float top_p = 1.0f;               // (0, 1]; 1: disabled
  float min_p = 0.0f;               // [0, 1]; 0: disabled
  float repetition_penalty = 1.0f;  // > 0; 1: disabled (prompt and output tokens)
  float presence_penalty = 0.0f;    // [-2, 2] (output tokens)
  float frequency_penalty = 0.0f;   // [-2, 2] (output tokens)
  std::vector<std::pair<int32_t, float>> logit_bias;  // token -> added logit
  std::optional<uint64_t> seed;     // unset: the sampler's default seed
  bool logprobs = false;            // report the sampled token's raw logprob (OpenAI `logprobs`)
  int32_t top_logprobs = 0;         // also the n most likely raw logprobs (needs logprobs)
  // Structured output: only tokens the grammar allows are sampled (grammar/token_constraint.h);
  // null: unconstrained. Shared, immutable.
  std::shared_ptr<const grammar::TokenConstraint> constraint;

  bool is_greedy() const { return temperature < kGreedyTemperature; }
  // Throws InvalidArgument for values outside the ranges above, non-finite values, or
  // logit_bias ids outside [0, vocab_size) (vocab_size <= 0 skips that check).
  void validate(int64_t vocab_size = 0) const;

  static constexpr float kGreedyTemperature = 1e-5f;
};

}  // namespace lemma
