#include "lemma/sampling/vocab_passes.h"

#include <array>
#include <cassert>
#include <limits>

#include "lemma/kernels/ops.h"

namespace lemma {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr size_t kLanes = 16;  // independent partial results, so the compiler can vectorise

}  // namespace

float max_value(std::span<const float> values) {
  std::array<float, kLanes> lane;
  lane.fill(kNegInf);
  size_t i = 0;
  for (; i + kLanes <= values.size(); i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) lane[j] = values[i + j] > lane[j] ? values[i + j] : lane[j];  // NaN loses
  }
  float max = kNegInf;
  for (; i < values.size(); ++i) max = values[i] > max ? values[i] : max;
  for (float v : lane) max = v > max ? v : max;
  return max;
}

double exp_weights(std::span<const float> values, float max, std::span<float> weights, std::span<double> block_sums) {
  assert(weights.size() >= values.size() && block_sums.size() >= weight_blocks(values.size()));
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) weights[i] = values[i] - max;  // -inf stays -inf, so exp gives 0
  kernels::exp_row(weights.first(n), weights.first(n));
  double total = 0.0;
  for (size_t b = 0; b * kWeightBlock < n; ++b) {
    const size_t begin = b * kWeightBlock, end = std::min(n, begin + kWeightBlock);
    // Double partial sums in a fixed order: within about 1e-16 of the sequential sum that
    // inverse_cdf scans, so a block's sum and its scan agree on all but the last ulps.
    std::array<double, kLanes> lane{};
    size_t i = begin;
    for (; i + kLanes <= end; i += kLanes) {
      for (size_t j = 0; j < kLanes; ++j) lane[j] += weights[i + j];
    }
    double sum = 0.0;
    for (; i < end; ++i) sum += weights[i];
    for (float v : lane) sum += v;
    block_sums[b] = sum;
    total += sum;
  }
  return total;
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
