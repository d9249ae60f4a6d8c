// Passes sampling makes over one row of logits (151936 entries for qwen2's vocabulary, once per
// running sequence per serving step), vectorised per ISA like the row ops in ops.h. Each has a
// scalar reference (Isa::kScalar); the overloads without `isa` use detected_isa(). Every op but
// exp_block_sums gives the same result on every ISA; exp_block_sums' weights differ by the vector
// exp's ulps, and its sums follow one fixed order (below) on every ISA.
// Pure functions over caller-owned spans; no allocation; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "lemma/kernels/exp_sum_block.h"
#include "lemma/kernels/isa.h"

namespace lemma::kernels {

// y[i] = x[i], NaN replaced by -inf; returns the number of NaNs. y may be x.
int64_t copy_masking_nan(std::span<const float> x, std::span<float> y);
int64_t copy_masking_nan(std::span<const float> x, std::span<float> y, Isa isa);

// The largest entry, NaN ignored; -inf when nothing is finite or above -inf (or x is empty).
float max_ignoring_nan(std::span<const float> x);
float max_ignoring_nan(std::span<const float> x, Isa isa);

// The first index holding max_ignoring_nan(x), or -1 when that is -inf.
int64_t argmax_first(std::span<const float> x);
int64_t argmax_first(std::span<const float> x, Isa isa);

// y[i] = x[i] / divisor (a true division, as the scalar code divides). y may be x.
void divide_row(std::span<const float> x, float divisor, std::span<float> y);
void divide_row(std::span<const float> x, float divisor, std::span<float> y, Isa isa);

constexpr int64_t exp_sum_blocks(int64_t n) { return (n + kExpSumBlock - 1) / kExpSumBlock; }

// w[i] = exp(x[i] - shift) (x = -inf gives 0; x must hold no NaN), block_sums[b] = the sum of the
// weights of entries [b * kExpSumBlock, (b + 1) * kExpSumBlock) in double; returns the sum of the
// block sums, in block order. A block's sum is accumulated in 16 double lanes (entry at block
// offset o into lane o % 16, in order), then sum = (((0 + (l0 + l8)) + (l1 + l9)) + ...) + (l7 + l15):
// the order a 16-wide vector loop gives, spelled out so every ISA and the reference agree. w may be x.
double exp_block_sums(std::span<const float> x, float shift, std::span<float> w, std::span<double> block_sums);
double exp_block_sums(std::span<const float> x, float shift, std::span<float> w, std::span<double> block_sums,
                      Isa isa);

// The first index i with x[i] > threshold (NaN never is), or x.size() when there is none.
int64_t first_above(std::span<const float> x, float threshold);
int64_t first_above(std::span<const float> x, float threshold, Isa isa);

// Writes to ids, in increasing order, the indices i with x[i] >= threshold and x[i] > -inf;
// returns how many (ids must have room for x.size()).
int64_t select_at_least(std::span<const float> x, float threshold, std::span<int32_t> ids);
int64_t select_at_least(std::span<const float> x, float threshold, std::span<int32_t> ids, Isa isa);

}  // namespace lemma::kernels
