// Rotary position embeddings applied in place to q or k vectors: in one call (apply_rope), or as
// the forward does it, with each token's cos/sin computed once per forward (rope_angles) and
// reused by q, k and every layer (rotate_heads). Both give the same bits. Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "lemma/model/rope_scaling.h"

namespace lemma::layers {

// x: [num_tokens, num_heads, head_dim] f32, rotated in place; positions: [num_tokens].
// The first rotary_dim = 2 * freqs.inv_freq.size() dimensions of each head are rotated.
void apply_rope(std::span<float> x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
                std::span<const int64_t> positions, const RopeFrequencies& freqs, RopeLayout layout);

// cos, sin: [positions.size(), half] with half = freqs.inv_freq.size():
// cos[t, i] = f32(cos(positions[t] * inv_freq[i]) * attention_factor), sin likewise.
void rope_angles(std::span<const int64_t> positions, const RopeFrequencies& freqs, std::span<float> cos,
                 std::span<float> sin);

// One token's heads x: [num_heads, head_dim], rotated in place by its `half` angles (one row of
// rope_angles()).
void rotate_heads(float* x, int64_t num_heads, int64_t head_dim, const float* cos, const float* sin, size_t half,
                  RopeLayout layout);

}  // namespace lemma::layers
