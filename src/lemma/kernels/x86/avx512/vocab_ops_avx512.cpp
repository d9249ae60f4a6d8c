// The vocabulary passes of vocab_ops.h with AVX-512: masked tails, compress-stores for the
// selection, exp16 weights summed in two 8-double accumulators (lanes o % 16 of each block).
#include <immintrin.h>

#include "lemma/kernels/exp_sum_block.h"
#include "lemma/kernels/x86/avx512/vector_math_avx512.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {
__m512 neg_inf16() { return _mm512_set1_ps(-__builtin_inff()); }
}  // namespace

int64_t copy_masking_nan_avx512(const float* x, float* y, int64_t n) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & m;
    count += __builtin_popcount(nan);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mask_mov_ps(v, nan, neg_inf16()));
  }
  return count;
}

float max_ignoring_nan_avx512(const float* x, int64_t n) {
  // vmaxps returns its second operand when either is NaN: the running max survives a NaN.
  __m512 a = neg_inf16(), b = neg_inf16();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a = _mm512_max_ps(_mm512_loadu_ps(x + i), a);
    b = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), b);
  }
  for (; i < n; i += 16) a = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf16(), tail_mask(n - i), x + i), a);
  return _mm512_reduce_max_ps(_mm512_max_ps(a, b));
}

int64_t argmax_first_avx512(const float* x, int64_t n) {
  const float max = max_ignoring_nan_avx512(x, n);
  if (max == -__builtin_inff()) return -1;
  const __m512 target = _mm512_set1_ps(max);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __mmask16 hit = _mm512_mask_cmp_ps_mask(m, _mm512_maskz_loadu_ps(m, x + i), target, _CMP_EQ_OQ);
    if (hit != 0) return i + __builtin_ctz(hit);
  }
  return -1;  // not reached: max is one of the entries
}

void divide_row_avx512(const float* x, float divisor, float* y, int64_t n) {
  const __m512 d = _mm512_set1_ps(divisor);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), d));
  }
}

double exp_block_sums_avx512(const float* x, float shift, float* w, double* block_sums, int64_t n) {
  const __m512 s = _mm512_set1_ps(shift);
  double total = 0.0;
  for (int64_t begin = 0; begin < n; begin += kExpSumBlock) {
    const int64_t end = begin + kExpSumBlock < n ? begin + kExpSumBlock : n;
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();  // lanes 0-7 and 8-15
    for (int64_t i = begin; i < end; i += 16) {
      const __mmask16 m = tail_mask(end - i);
      const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s)));
      _mm512_mask_storeu_ps(w + i, m, e);
      accumulate_double(e, lo, hi);  // masked lanes add +0: no change
    }
    const double sum = reduce_double(lo, hi);
    block_sums[begin / kExpSumBlock] = sum;
    total += sum;
  }
  return total;
}

int64_t first_above_avx512(const float* x, float threshold, int64_t n) {
  const __m512 t = _mm512_set1_ps(threshold);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __mmask16 above = _mm512_mask_cmp_ps_mask(m, _mm512_maskz_loadu_ps(m, x + i), t, _CMP_GT_OQ);
    if (above != 0) return i + __builtin_ctz(above);
  }
  return n;
}

int64_t select_at_least_avx512(const float* x, float threshold, int32_t* ids, int64_t n) {
  const __m512 t = _mm512_set1_ps(threshold);
  __m512i index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i step = _mm512_set1_epi32(16);
  int64_t count = 0;
  for (int64_t i = 0; i < n; i += 16, index = _mm512_add_epi32(index, step)) {
    const __m512 v = _mm512_mask_loadu_ps(neg_inf16(), tail_mask(n - i), x + i);
    const __mmask16 keep = _mm512_cmp_ps_mask(v, t, _CMP_GE_OQ) & _mm512_cmp_ps_mask(v, neg_inf16(), _CMP_GT_OQ);
    if (keep == 0) continue;
    const int kept = __builtin_popcount(keep);
    // Compress in a register, then a masked store (a compress straight to memory is slow on some cores).
    _mm512_mask_storeu_epi32(ids + count, static_cast<__mmask16>((1u << kept) - 1u), _mm512_maskz_compress_epi32(keep, index));
    count += kept;
  }
  return count;
}

}  // namespace lemma::kernels::x86
