#include "lemma/sampling/vocab_passes.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "lemma/kernels/vocab_ops.h"

namespace lemma {

float max_value(std::span<const float> values, kernels::Isa isa) { return kernels::max_ignoring_nan(values, isa); }

double exp_weights(std::span<const float> values, float max, std::span<float> weights, std::span<double> block_sums,
                   kernels::Isa isa) {
  return kernels::exp_block_sums(values, max, weights.first(values.size()), block_sums, isa);
}

float min_p_cutoff(float max, double log_min_p) {
  const auto keeps = [&](float l) { return static_cast<double>(l) - static_cast<double>(max) >= log_min_p; };
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  auto l = static_cast<float>(static_cast<double>(max) + log_min_p);
  while (!keeps(l)) l = std::nextafter(l, max);
  while (l > kNegInf && keeps(std::nextafter(l, kNegInf))) l = std::nextafter(l, kNegInf);
  return l;
}

void best_positions(std::span<const float> values, size_t k, std::span<int32_t> out, kernels::Isa isa) {
  assert(k <= values.size() && k <= out.size());
  if (k == 0) return;
  const auto better = [&](int32_t a, int32_t b) {
    const float va = values[static_cast<size_t>(a)], vb = values[static_cast<size_t>(b)];
    return va != vb ? va > vb : a < b;
  };
  // The heap keeps the worst kept position on top.
  const auto begin = out.begin(), end = out.begin() + static_cast<std::ptrdiff_t>(k);
  for (size_t p = 0; p < k; ++p) out[p] = static_cast<int32_t>(p);
  std::make_heap(begin, end, better);
  // Later positions lose ties, so only a strictly larger value displaces the worst kept one.
  for (size_t p = k; p < values.size(); ++p) {
    p += static_cast<size_t>(kernels::first_above(values.subspan(p), values[static_cast<size_t>(out[0])], isa));
    if (p >= values.size()) break;
    std::pop_heap(begin, end, better);
    *(end - 1) = static_cast<int32_t>(p);
    std::push_heap(begin, end, better);
  }
}

size_t inverse_cdf(std::span<const float> weights, std::span<const double> block_sums, double target) {
  const size_t n = weights.size();
  double cumulative = 0.0;
  for (size_t b = 0; b * kWeightBlock < n; ++b) {
    // Skip whole blocks the target lies past; the entry scan below settles rounding either way.
    if (cumulative + block_sums[b] <= target && (b + 1) * kWeightBlock < n) {
      cumulative += block_sums[b];
      continue;
    }
    const size_t end = std::min(n, (b + 1) * kWeightBlock);
    double running = cumulative;
    for (size_t i = b * kWeightBlock; i < end; ++i) {
      running += weights[i];
      if (target < running && weights[i] > 0.0f) return i;
    }
    cumulative += block_sums[b];
  }
  size_t last = n;
  while (last > 0 && !(weights[last - 1] > 0.0f)) --last;
  return last == 0 ? 0 : last - 1;
}

}  // namespace lemma
