// The passes sampling makes over one vocabulary row, written to stay cheap at 150K entries: a
// serving step samples once per running sequence, and with per-token std::exp in double, sorts and
// nth_element over all ids a temperature-1 draw cost 0.9 ms and a top_k one 1.8 ms (qwen2's
// 151936-entry vocabulary, `bench/sampling_bench`), 30-60 ms of every 32-sequence step.
// Weights use the kernels' vector exp (kernels::exp_row, the active ISA's), so a seeded draw is
// reproducible for one ISA selection, as the logits themselves are.
// Pure functions over caller-provided spans; no allocation.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace lemma {

// Entries per partial sum of exp_weights (inverse_cdf finds the block first, then the entry).
constexpr size_t kWeightBlock = 1024;
constexpr size_t weight_blocks(size_t n) { return (n + kWeightBlock - 1) / kWeightBlock; }

// Largest entry, NaN ignored; -inf when nothing is finite (or the span is empty).
float max_value(std::span<const float> values);

// weights[i] = exp(values[i] - max) (0 for -inf), block_sums[b] = the sum of block b's weights
// (weight_blocks(n) of them); returns the total in double. `weights` may be `values`.
double exp_weights(std::span<const float> values, float max, std::span<float> weights, std::span<double> block_sums);

// The first index at which the running sum of weights exceeds `target` (0 <= target < total), or
// the last positive weight when rounding leaves `target` at the very top. Weights of 0 are never
// chosen. The running sum before entry i is the sum of block_sums of the blocks before i's, plus
// the entries before i in its block, in order.
size_t inverse_cdf(std::span<const float> weights, std::span<const double> block_sums, double target);

// The k best of positions 0 .. count-1 (value(p) larger first, lower position on ties, a strict
// order) written to out[0 .. k) in no particular order, in one pass with a heap of k: O(count)
// compares for k << count, where sorting or nth_element over all positions is not.
template <class ValueAt>
void best_positions(size_t count, size_t k, ValueAt&& value, std::span<int32_t> out) {
  // `worse(a, b)`: a ranks after b. The heap keeps the worst kept position on top.
  const auto better = [&](int32_t a, int32_t b) {
    const float va = value(a), vb = value(b);
    return va != vb ? va > vb : a < b;
  };
  const auto begin = out.begin(), end = out.begin() + static_cast<std::ptrdiff_t>(k);
  for (size_t p = 0; p < k; ++p) out[p] = static_cast<int32_t>(p);
  std::make_heap(begin, end, better);
  float worst = value(out[0]);
  for (size_t p = k; p < count; ++p) {
    // Later positions lose ties, so only a strictly larger value displaces the worst kept one.
    if (!(value(static_cast<int32_t>(p)) > worst)) continue;
    std::pop_heap(begin, end, better);
    *(end - 1) = static_cast<int32_t>(p);
    std::push_heap(begin, end, better);
    worst = value(out[0]);
  }
}

}  // namespace lemma
