// Applying rotary position embeddings in place to q or k vectors. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "lemma/model/rope_scaling.h"

namespace lemma::layers {

// x: [num_tokens, num_heads, head_dim] f32, rotated in place; positions: [num_tokens].
// The first rotary_dim = 2 * freqs.inv_freq.size() dimensions of each head are rotated.
void apply_rope(std::span<float> x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                std::span<const int64_t> positions, const RopeFrequencies& freqs, RopeLayout layout);

}  // namespace lemma::layers
