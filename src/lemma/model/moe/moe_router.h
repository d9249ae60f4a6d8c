// The MoE router's choice for one token (G27): router logits -> its top_k experts and their
// weights, by a RoutingRule (moe_config.h: softmax/sigmoid scores, optional score-correction bias
// that only chooses, group-limited top-k with DeepSeek-V2's group max or V3's top-2 sum,
// renormalisation, routed_scaling_factor). Computed in f32: the golden data's smallest routing
// margins (~1e-5) survive f32 rounding, not bf16's. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "lemma/model/moe/moe_config.h"

namespace lemma::moe {

// Scratch floats route_token() needs for `num_experts` experts.
inline constexpr int64_t route_scratch_floats(int64_t num_experts) { return 2 * num_experts; }

// logits: [E]; correction_bias: [E] or empty; scratch: >= route_scratch_floats(E).
// experts: [top_k] written best first (by choice score; ties to the lower index); weights: [top_k]
// in the same order. Asserts the spans' sizes (the config was validated at load).
void route_token(std::span<const float> logits, std::span<const float> correction_bias, const RoutingRule& rule,
                 std::span<float> scratch, std::span<int32_t> experts, std::span<float> weights);

}  // namespace lemma::moe
