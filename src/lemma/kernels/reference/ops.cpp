#include <cmath>
#include <limits>

#include "lemma/kernels/reference/ops_reference.h"

namespace lemma::kernels {

namespace {
// y = (x * r) * weight with r from the sum of x's squares.
void rms_scale(const float* x, double sum_squares, const float* weight, float eps, float* y, int64_t n) {
  const double mean = n == 0 ? 0.0 : sum_squares / static_cast<double>(n);
  const auto r = static_cast<float>(1.0 / std::sqrt(mean + static_cast<double>(eps)));
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * r) * weight[i];
}
}  // namespace

void rmsnorm_reference(const float* x, const float* weight, float eps, float* y, int64_t n) {
  double sum_squares = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(x[i]) * x[i];
  rms_scale(x, sum_squares, weight, eps, y, n);
}

void add_rmsnorm_reference(float* residual, const float* delta, const float* weight, float eps, float* y, int64_t n) {
  double sum_squares = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float sum = residual[i] + delta[i];
    residual[i] = sum;
    sum_squares += static_cast<double>(sum) * sum;
  }
  rms_scale(residual, sum_squares, weight, eps, y, n);
}

void silu_mul_reference(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax_reference(const float* x, float* y, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  bool has_nan = false;
  for (int64_t i = 0; i < n; ++i) {
    has_nan |= std::isnan(x[i]);
    if (x[i] > max) max = x[i];
  }
  if (has_nan) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
    return;
  }
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::exp(x[i] - max);
    sum += y[i];
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

void add_reference(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void exp_reference(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

}  // namespace lemma::kernels
