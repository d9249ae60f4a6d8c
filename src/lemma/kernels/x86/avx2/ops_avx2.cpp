// Row ops with AVX2 (see ops.h). exp: Cephes-style range reduction and degree-6 polynomial; 2^n
// built in two factors so n = 128 works; results below FLT_MIN flush to 0. Tails via buffers.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

constexpr float kExpHi = 88.7228394f;   // above: +inf
constexpr float kExpLo = -87.3365479f;  // below: 0 (flushed; the true result is subnormal)

__m256 pow2(__m256i n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23)); }

__m256 exp8(__m256 x_in) {
  // min/max return their second operand for NaN, so a NaN input stays NaN throughout.
  __m256 x = _mm256_min_ps(_mm256_set1_ps(kExpHi), x_in);
  x = _mm256_max_ps(_mm256_set1_ps(kExpLo), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);  // in [-126, 128]
  const __m256i half = _mm256_srai_epi32(ni, 1);
  __m256 result = _mm256_mul_ps(_mm256_mul_ps(y, pow2(half)), pow2(_mm256_sub_epi32(ni, half)));
  result = _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x_in, _mm256_set1_ps(kExpHi), _CMP_GT_OQ));
  result = _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x_in, _mm256_set1_ps(kExpLo), _CMP_LT_OQ));
  return result;
}

// Loads/stores the last partial vector through a buffer padded with `fill`.
__m256 load_tail(const float* p, int64_t count, float fill) {
  float buf[8] = {fill, fill, fill, fill, fill, fill, fill, fill};
  std::memcpy(buf, p, static_cast<size_t>(count) * 4);
  return _mm256_loadu_ps(buf);
}
void store_tail(float* p, __m256 v, int64_t count) {
  float buf[8];
  _mm256_storeu_ps(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(count) * 4);
}
__m256 load(const float* p, int64_t i, int64_t n, float fill) {
  return n - i >= 8 ? _mm256_loadu_ps(p + i) : load_tail(p + i, n - i, fill);
}
void store(float* p, int64_t i, int64_t n, __m256 v) {
  if (n - i >= 8) {
    _mm256_storeu_ps(p + i, v);
  } else {
    store_tail(p + i, v, n - i);
  }
}

void accumulate_double(__m256 v, __m256d& lo, __m256d& hi) {
  lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

double reduce_double(__m256d lo, __m256d hi) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(lo, hi));
  return ((lanes[0] + lanes[1]) + lanes[2]) + lanes[3];
}

}  // namespace

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
