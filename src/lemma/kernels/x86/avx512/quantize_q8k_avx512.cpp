// x -> Q8_K-style activation blocks (q8k_activations.h) with AVX-512: one 256-value block is 16 zmm,
// one per 16-value code sum. Same bytes as quantize_q8k_activations_reference (see the AVX2 version
// for the NaN and rounding rules).
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/int8_kernels.h"

namespace lemma::kernels::x86 {

void quantize_q8k_activations_avx512(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  constexpr int kBlock = static_cast<int>(kQ8KBlock);
  const int64_t blocks = K / kBlock;
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    auto* codes = static_cast<int8_t*>(out) + m * q8k_row_bytes(K);
    auto* scales = const_cast<float*>(q8k_scales(out, K, m));
    auto* sums = const_cast<int16_t*>(q8k_sums(out, K, m));
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = row + b * kBlock;
      __m512 vmax = _mm512_setzero_ps();
      __mmask16 unordered = 0;
      for (int i = 0; i < kBlock; i += 16) {
        const __m512 v = _mm512_loadu_ps(xb + i);
        vmax = _mm512_max_ps(_mm512_and_ps(v, abs_mask), vmax);
        unordered |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      }
      const float amax = _mm512_reduce_max_ps(vmax);
      const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
      const __m512 vid = _mm512_set1_ps(id);
      int8_t* q = codes + b * kBlock;
      for (int i = 0; i < kBlock; i += 16) {
        __m512 s = _mm512_mul_ps(_mm512_loadu_ps(xb + i), vid);
        s = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(s, s, _CMP_ORD_Q), s);
        s = _mm512_min_ps(_mm512_max_ps(s, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
        const __m512i v = _mm512_cvtps_epi32(s);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(v));
        sums[b * 16 + i / 16] = static_cast<int16_t>(_mm512_reduce_add_epi32(v));
      }
      scales[b] = unordered != 0 ? std::numeric_limits<float>::quiet_NaN() : amax != 0.0f ? 1.0f / id : 0.0f;
    }
    std::memset(codes + K, 0, static_cast<size_t>(q8k_codes_stride(K) - K));
    for (int64_t b = blocks; b < q8k_scales_stride(K); ++b) scales[b] = 0.0f;
    for (int64_t g = K / kQ8KGroup; g < q8k_sums_stride(K); ++g) sums[g] = 0;
  }
}

}  // namespace lemma::kernels::x86
