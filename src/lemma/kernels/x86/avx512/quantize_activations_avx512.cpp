// x -> int8 activation blocks (int8_activations.h) with AVX-512: one 32-value block is two zmm.
// Same bytes as quantize_activations_reference: the max ignores NaN (x is vmaxps's first operand),
// NaN products become 0 before the f32 clamp, and vcvtps2dq rounds half to even.
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/x86/int8_kernels.h"

namespace lemma::kernels::x86 {

namespace {

// 16 values -> 16 codes q in [-127, 127] as int32.
__m512i codes16(__m512 v, __m512 id) {
  __m512 s = _mm512_mul_ps(v, id);
  s = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(s, s, _CMP_ORD_Q), s);
  s = _mm512_min_ps(_mm512_max_ps(s, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvtps_epi32(s);
}

// Both forms in one pass: codes + 128 (Signed = false), or the signed codes q and each block's code
// sum (what make_int8_activations_signed() makes of the first: the same bytes, without a second
// pass over the codes, which took 2/3 of a 512 x 4864 quantisation).
template <bool Signed>
void quantize(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t blocks = K / kInt8ActivationBlock;
  auto* base = static_cast<uint8_t*>(out);
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  const __m512i offset = _mm512_set1_epi32(Signed ? 0 : 128);
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    uint8_t* codes = base + m * (Signed ? int8_signed_row_bytes(K) : int8_row_bytes(K));
    auto* scales = reinterpret_cast<float*>(codes + int8_codes_stride(K));
    int32_t* sums = Signed ? reinterpret_cast<int32_t*>(scales + int8_scales_stride(K)) : nullptr;
    for (int64_t b = 0; b < blocks; ++b) {
      const __m512 v0 = _mm512_loadu_ps(row + b * 32), v1 = _mm512_loadu_ps(row + b * 32 + 16);
      __m512 vmax = _mm512_max_ps(_mm512_and_ps(v0, abs_mask), _mm512_setzero_ps());
      vmax = _mm512_max_ps(_mm512_and_ps(v1, abs_mask), vmax);
      const bool has_nan = (_mm512_cmp_ps_mask(v0, v0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q)) != 0;
      const float amax = _mm512_reduce_max_ps(vmax);
      const float d = amax / 127.0f;
      const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
      const __m512i q0 = codes16(v0, id), q1 = codes16(v1, id);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + b * 32), _mm512_cvtepi32_epi8(_mm512_add_epi32(q0, offset)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + b * 32 + 16), _mm512_cvtepi32_epi8(_mm512_add_epi32(q1, offset)));
      scales[b] = has_nan ? std::numeric_limits<float>::quiet_NaN() : _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
      if constexpr (Signed) sums[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    }
    std::memset(codes + K, Signed ? 0 : 128, static_cast<size_t>(int8_codes_stride(K) - K));
    for (int64_t b = blocks; b < int8_scales_stride(K); ++b) {
      scales[b] = 0.0f;
      if constexpr (Signed) sums[b] = 0;
    }
  }
}

}  // namespace

void quantize_activations_avx512(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  quantize<false>(x, x_stride, M, K, out);
}

// The signed form the interleaved kernels read (interleaved_blocks.h).
void quantize_signed_activations_avx512(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  quantize<true>(x, x_stride, M, K, out);
}

}  // namespace lemma::kernels::x86
