#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "lemma/kernels/reference/vocab_ops_reference.h"
#include "lemma/kernels/vocab_ops.h"

namespace lemma::kernels {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

int64_t copy_masking_nan_reference(const float* x, float* y, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool nan = std::isnan(x[i]);
    count += nan ? 1 : 0;
    y[i] = nan ? kNegInf : x[i];
  }
  return count;
}

float max_ignoring_nan_reference(const float* x, int64_t n) {
  float max = kNegInf;
  for (int64_t i = 0; i < n; ++i)
    if (x[i] > max) max = x[i];  // NaN compares false
  return max;
}

int64_t argmax_first_reference(const float* x, int64_t n) {
  const float max = max_ignoring_nan_reference(x, n);
  if (max == kNegInf) return -1;
  int64_t i = 0;
  while (x[i] != max) ++i;
  return i;
}

void divide_row_reference(const float* x, float divisor, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / divisor;
}

double block_sums_of_weights(const float* w, double* block_sums, int64_t n) {
  double total = 0.0;
  for (int64_t begin = 0; begin < n; begin += kExpSumBlock) {
    const int64_t end = std::min(n, begin + kExpSumBlock);
    std::array<double, 16> lane{};
    for (int64_t i = begin; i < end; ++i) lane[static_cast<size_t>((i - begin) % 16)] += w[i];
    double sum = 0.0;
    for (size_t j = 0; j < 8; ++j) sum += lane[j] + lane[j + 8];
    block_sums[begin / kExpSumBlock] = sum;
    total += sum;
  }
  return total;
}

double exp_block_sums_reference(const float* x, float shift, float* w, double* block_sums, int64_t n) {
  for (int64_t i = 0; i < n; ++i) w[i] = std::exp(x[i] - shift);
  return block_sums_of_weights(w, block_sums, n);
}

int64_t first_above_reference(const float* x, float threshold, int64_t n) {
  int64_t i = 0;
  while (i < n && !(x[i] > threshold)) ++i;
  return i;
}

int64_t select_at_least_reference(const float* x, float threshold, int32_t* ids, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (x[i] >= threshold && x[i] > kNegInf) ids[count++] = static_cast<int32_t>(i);
  return count;
}

}  // namespace lemma::kernels
