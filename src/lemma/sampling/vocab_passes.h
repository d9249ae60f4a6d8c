// The passes sampling makes over one vocabulary row, written to stay cheap at 150K entries: a
// serving step samples once per running sequence, and with per-token std::exp in double, sorts and
// nth_element over all ids a temperature-1 draw cost 0.9 ms and a top_k one 1.8 ms (qwen2's
// 151936-entry vocabulary, `bench/sampling_bench`), 30-60 ms of every 32-sequence step.
// The passes over every entry are the kernels' (kernels/vocab_ops.h, vectorised per ISA); weights
// use the active ISA's vector exp, so a seeded draw is reproducible for one ISA selection, as the
// logits themselves are.
// Pure functions over caller-provided spans; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "lemma/kernels/exp_sum_block.h"
#include "lemma/kernels/isa.h"

namespace lemma {

// Entries per partial sum of exp_weights (inverse_cdf finds the block first, then the entry).
constexpr size_t kWeightBlock = static_cast<size_t>(kernels::kExpSumBlock);
constexpr size_t weight_blocks(size_t n) { return (n + kWeightBlock - 1) / kWeightBlock; }

// Largest entry, NaN ignored; -inf when nothing is finite (or the span is empty).
float max_value(std::span<const float> values, kernels::Isa isa = kernels::detected_isa());

// weights[i] = exp(values[i] - max) (0 for -inf; no NaN), block_sums[b] = the sum of block b's
// weights in double (weight_blocks(n) of them, in kernels::exp_block_sums' fixed order); returns
// the total. `weights` may be `values`.
double exp_weights(std::span<const float> values, float max, std::span<float> weights, std::span<double> block_sums,
                   kernels::Isa isa = kernels::detected_isa());

// The first index at which the running sum of weights exceeds `target` (0 <= target < total), or
// the last positive weight when rounding leaves `target` at the very top. Weights of 0 are never
// chosen. The running sum before entry i is the sum of block_sums of the blocks before i's, plus
// the entries before i in its block, in order.
size_t inverse_cdf(std::span<const float> weights, std::span<const double> block_sums, double target);

// min_p's test in float: the smallest float l with (double)l - (double)max >= log_min_p (the test
// is monotone in l), so `l >= cutoff` keeps exactly the tokens the double test keeps.
float min_p_cutoff(float max, double log_min_p);

// The k best positions of `values` (larger value first, lower position on ties, a strict order)
// written to out[0 .. k) in no particular order, in one pass with a heap of k: O(n) compares for
// k << n, where sorting or nth_element over all positions is not. The pass jumps from one
// value above the worst kept one to the next with kernels::first_above (vectorised).
void best_positions(std::span<const float> values, size_t k, std::span<int32_t> out, kernels::Isa isa = kernels::detected_isa());

}  // namespace lemma
