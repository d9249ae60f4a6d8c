// The vocabulary passes of vocab_ops.h with AVX2: tails through padded buffers, exp8 weights
// summed in four 4-double accumulators (lanes o % 16 of each block, as the 16-wide order asks).
#include <immintrin.h>

#include "lemma/kernels/exp_sum_block.h"
#include "lemma/kernels/x86/avx2/vector_math_avx2.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {
constexpr float kNegInf = -__builtin_inff();
// Entries [i, i + 8) of p[0, n), padded with `fill` (all fill when i >= n).
__m256 load_or(const float* p, int64_t i, int64_t n, float fill) {
  return i < n ? load(p, i, n, fill) : _mm256_set1_ps(fill);
}
int valid_lanes(int64_t i, int64_t n) { return n - i >= 8 ? 0xFF : (1 << (n - i)) - 1; }
}  // namespace

int64_t copy_masking_nan_avx2(const float* x, float* y, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = load(x, i, n, 0.0f);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    count += __builtin_popcount(_mm256_movemask_ps(nan) & valid_lanes(i, n));
    store(y, i, n, _mm256_blendv_ps(v, _mm256_set1_ps(kNegInf), nan));
  }
  return count;
}

float max_ignoring_nan_avx2(const float* x, int64_t n) {
  // vmaxps returns its second operand when either is NaN: the running max survives a NaN.
  __m256 a = _mm256_set1_ps(kNegInf), b = a;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a = _mm256_max_ps(_mm256_loadu_ps(x + i), a);
    b = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), b);
  }
  for (; i < n; i += 8) a = _mm256_max_ps(load(x, i, n, kNegInf), a);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(a, b));
  float max = kNegInf;
  for (float v : lanes) max = v > max ? v : max;
  return max;
}

int64_t argmax_first_avx2(const float* x, int64_t n) {
  const float max = max_ignoring_nan_avx2(x, n);
  if (max == kNegInf) return -1;
  const __m256 target = _mm256_set1_ps(max);
  for (int64_t i = 0; i < n; i += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(load(x, i, n, kNegInf), target, _CMP_EQ_OQ)) & valid_lanes(i, n);
    if (hit != 0) return i + __builtin_ctz(static_cast<unsigned>(hit));
  }
  return -1;  // not reached: max is one of the entries
}

void divide_row_avx2(const float* x, float divisor, float* y, int64_t n) {
  const __m256 d = _mm256_set1_ps(divisor);
  for (int64_t i = 0; i < n; i += 8) store(y, i, n, _mm256_div_ps(load(x, i, n, 0.0f), d));
}

double exp_block_sums_avx2(const float* x, float shift, float* w, double* block_sums, int64_t n) {
  const __m256 s = _mm256_set1_ps(shift);
  double total = 0.0;
  for (int64_t begin = 0; begin < n; begin += kExpSumBlock) {
    const int64_t end = begin + kExpSumBlock < n ? begin + kExpSumBlock : n;
    __m256d l0 = _mm256_setzero_pd(), l4 = l0, l8 = l0, l12 = l0;  // lanes 0-3, 4-7, 8-11, 12-15
    for (int64_t i = begin; i < end; i += 16) {
      // Padding entries are -inf, whose weight is 0: adding it leaves a lane unchanged.
      const __m256 e0 = exp8(_mm256_sub_ps(load_or(x, i, end, kNegInf), s));
      const __m256 e1 = exp8(_mm256_sub_ps(load_or(x, i + 8, end, kNegInf), s));
      store(w, i, end, e0);
      if (i + 8 < end) store(w, i + 8, end, e1);
      accumulate_double(e0, l0, l4);
      accumulate_double(e1, l8, l12);
    }
    alignas(32) double low[4], high[4];
    _mm256_store_pd(low, _mm256_add_pd(l0, l8));
    _mm256_store_pd(high, _mm256_add_pd(l4, l12));
    double sum = 0.0;
    for (double v : low) sum += v;
    for (double v : high) sum += v;
    block_sums[begin / kExpSumBlock] = sum;
    total += sum;
  }
  return total;
}

int64_t first_above_avx2(const float* x, float threshold, int64_t n) {
  const __m256 t = _mm256_set1_ps(threshold);
  for (int64_t i = 0; i < n; i += 8) {
    const int above = _mm256_movemask_ps(_mm256_cmp_ps(load(x, i, n, kNegInf), t, _CMP_GT_OQ)) & valid_lanes(i, n);
    if (above != 0) return i + __builtin_ctz(static_cast<unsigned>(above));
  }
  return n;
}

int64_t select_at_least_avx2(const float* x, float threshold, int32_t* ids, int64_t n) {
  const __m256 t = _mm256_set1_ps(threshold), neg_inf = _mm256_set1_ps(kNegInf);
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = load(x, i, n, kNegInf);
    unsigned keep = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(v, t, _CMP_GE_OQ), _mm256_cmp_ps(v, neg_inf, _CMP_GT_OQ))));
    for (; keep != 0; keep &= keep - 1) ids[count++] = static_cast<int32_t>(i + __builtin_ctz(keep));
  }
  return count;
}

}  // namespace lemma::kernels::x86
