// Row ops with AVX-512 (see ops.h). exp: Cephes-style range reduction and degree-6 polynomial,
// scaled with vscalefps (correct overflow, underflow and subnormals); masked tails.
#include <immintrin.h>

#include "lemma/kernels/x86/x86_kernels.h"
#include "lemma/kernels/x86/avx512/vector_math_avx512.h"

namespace lemma::kernels::x86 {

void exp_avx512(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, exp16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

void add_avx512(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void silu_mul_avx512(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

namespace {
// y = (x * r) * weight, r from the sum of squares accumulated in (lo, hi).
void rms_scale(const float* x, __m512d lo, __m512d hi, const float* weight, float eps, float* y, int64_t n) {
  // Squares are formed in float (the reference squares in double): a relative difference of at
  // most 2^-24 per term.
  const double mean = n == 0 ? 0.0 : reduce_double(lo, hi) / static_cast<double>(n);
  const __m512 r = _mm512_set1_ps(static_cast<float>(1.0 / __builtin_sqrt(mean + static_cast<double>(eps))));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), r);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + i)));
  }
}
}  // namespace

void rmsnorm_avx512(const float* x, const float* weight, float eps, float* y, int64_t n) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
    accumulate_double(_mm512_mul_ps(v, v), lo, hi);
  }
  rms_scale(x, lo, hi, weight, eps, y, n);
}

// add_avx512 then rmsnorm_avx512 in two passes instead of three: the sums are stored and squared
// in the same lanes and order, so the bits are theirs.
void add_rmsnorm_avx512(float* residual, const float* delta, const float* weight, float eps, float* y, int64_t n) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, residual + i), _mm512_maskz_loadu_ps(m, delta + i));
    _mm512_mask_storeu_ps(residual + i, m, v);
    accumulate_double(_mm512_mul_ps(v, v), lo, hi);
  }
  rms_scale(residual, lo, hi, weight, eps, y, n);
}

void softmax_avx512(const float* x, float* y, int64_t n) {
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  __m512 max = neg_inf;
  __mmask16 nan = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_mask_loadu_ps(neg_inf, m, x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    max = _mm512_max_ps(max, v);
  }
  const float row_max = _mm512_reduce_max_ps(max);
  if (nan != 0 || row_max == -__builtin_inff()) {
    const __m512 fill = nan != 0 ? _mm512_set1_ps(__builtin_nanf("")) : _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) _mm512_mask_storeu_ps(y + i, tail_mask(n - i), fill);
    return;
  }
  const __m512 shift = _mm512_set1_ps(row_max);
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(neg_inf, m, x + i), shift)));
    _mm512_mask_storeu_ps(y + i, m, e);
    accumulate_double(e, lo, hi);
  }
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / reduce_double(lo, hi)));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inv));
  }
}

}  // namespace lemma::kernels::x86
