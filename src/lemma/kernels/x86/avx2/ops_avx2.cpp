// Row ops with AVX2 (see ops.h). exp: Cephes-style range reduction and degree-6 polynomial; 2^n
// built in two factors so n = 128 works; results below FLT_MIN flush to 0. Tails via buffers.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/x86/x86_kernels.h"
#include "lemma/kernels/x86/avx2/vector_math_avx2.h"

namespace lemma::kernels::x86 {

void exp_avx2(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) store(y, i, n, exp8(load(x, i, n, 0.0f)));
}

void add_avx2(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) store(out, i, n, _mm256_add_ps(load(a, i, n, 0.0f), load(b, i, n, 0.0f)));
}

void silu_mul_avx2(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 g = load(gate, i, n, 0.0f);
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), g))));
    store(out, i, n, _mm256_mul_ps(silu, load(up, i, n, 0.0f)));
  }
}

namespace {
// y = (x * r) * weight, r from the sum of squares accumulated in (lo, hi).
void rms_scale(const float* x, __m256d lo, __m256d hi, const float* weight, float eps, float* y, int64_t n) {
  const double mean = n == 0 ? 0.0 : reduce_double(lo, hi) / static_cast<double>(n);
  const __m256 r = _mm256_set1_ps(static_cast<float>(1.0 / __builtin_sqrt(mean + static_cast<double>(eps))));
  for (int64_t i = 0; i < n; i += 8) {
    store(y, i, n, _mm256_mul_ps(_mm256_mul_ps(load(x, i, n, 0.0f), r), load(weight, i, n, 0.0f)));
  }
}
}  // namespace

void rmsnorm_avx2(const float* x, const float* weight, float eps, float* y, int64_t n) {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = load(x, i, n, 0.0f);
    accumulate_double(_mm256_mul_ps(v, v), lo, hi);
  }
  rms_scale(x, lo, hi, weight, eps, y, n);
}

// add_avx2 then rmsnorm_avx2 in two passes instead of three: the sums are stored and squared in
// the same lanes and order (zero padding in the tail), so the bits are theirs.
void add_rmsnorm_avx2(float* residual, const float* delta, const float* weight, float eps, float* y, int64_t n) {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = _mm256_add_ps(load(residual, i, n, 0.0f), load(delta, i, n, 0.0f));
    store(residual, i, n, v);
    accumulate_double(_mm256_mul_ps(v, v), lo, hi);
  }
  rms_scale(residual, lo, hi, weight, eps, y, n);
}

void softmax_avx2(const float* x, float* y, int64_t n) {
  const float neg_inf = -__builtin_inff();
  __m256 max = _mm256_set1_ps(neg_inf);
  __m256 nan = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = load(x, i, n, neg_inf);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    max = _mm256_max_ps(max, v);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, max);
  float row_max = neg_inf;
  for (float v : lanes) row_max = v > row_max ? v : row_max;
  const bool has_nan = _mm256_movemask_ps(nan) != 0;
  if (has_nan || row_max == neg_inf) {
    const __m256 fill = has_nan ? _mm256_set1_ps(__builtin_nanf("")) : _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) store(y, i, n, fill);
    return;
  }
  const __m256 shift = _mm256_set1_ps(row_max);
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(load(x, i, n, neg_inf), shift));  // padding: exp(-inf) = 0
    store(y, i, n, e);
    accumulate_double(e, lo, hi);
  }
  const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / reduce_double(lo, hi)));
  for (int64_t i = 0; i < n; i += 8) store(y, i, n, _mm256_mul_ps(load(y, i, n, 0.0f), inv));
}

}  // namespace lemma::kernels::x86
