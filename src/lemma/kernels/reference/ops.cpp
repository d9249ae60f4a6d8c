#include "lemma/kernels/ops.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace lemma::kernels {

void rmsnorm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> y) {
  assert(x.size() == weight.size() && x.size() == y.size());
  double sum_squares = 0.0;
  for (float v : x) sum_squares += static_cast<double>(v) * v;
  const double mean = x.empty() ? 0.0 : sum_squares / static_cast<double>(x.size());
  const auto r = static_cast<float>(1.0 / std::sqrt(mean + static_cast<double>(eps)));
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] * r) * weight[i];
}

void silu_mul(std::span<const float> gate, std::span<const float> up, std::span<float> out) {
  assert(gate.size() == up.size() && gate.size() == out.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(std::span<const float> x, std::span<float> y) {
  assert(x.size() == y.size());
  float max = -std::numeric_limits<float>::infinity();
  bool has_nan = false;
  for (float v : x) {
    has_nan |= std::isnan(v);
    if (v > max) max = v;
  }
  if (has_nan) {
    for (float& v : y) v = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  if (max == -std::numeric_limits<float>::infinity()) {
    for (float& v : y) v = 0.0f;
    return;
  }
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = std::exp(x[i] - max);
    sum += y[i];
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (float& v : y) v *= inv;
}

void add(std::span<const float> a, std::span<const float> b, std::span<float> out) {
  assert(a.size() == b.size() && a.size() == out.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
}

}  // namespace lemma::kernels
