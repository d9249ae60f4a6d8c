// x -> Q8_K-style activation blocks (q8k_activations.h) with AVX2: one 256-value block is 32 ymm.
// Same bytes as quantize_q8k_activations_reference: the max ignores NaN (x is vmaxps's first
// operand), NaN products become 0 before the f32 clamp, and vcvtps2dq rounds half to even.
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/int8_kernels.h"

namespace lemma::kernels::x86 {

namespace {

// 8 values -> 8 int32 codes.
__m256i codes8(__m256 v, __m256 id) {
  __m256 s = _mm256_mul_ps(v, id);
  s = _mm256_and_ps(s, _mm256_cmp_ps(s, s, _CMP_ORD_Q));  // NaN -> 0
  s = _mm256_min_ps(_mm256_max_ps(s, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  return _mm256_cvtps_epi32(s);
}

// The sum of 16 signed bytes: vpsadbw on the bytes + 128, less 16 * 128.
int16_t sum16(__m128i q) {
  const __m128i sad = _mm_sad_epu8(_mm_xor_si128(q, _mm_set1_epi8(static_cast<char>(0x80))), _mm_setzero_si128());
  return static_cast<int16_t>(_mm_cvtsi128_si32(_mm_add_epi64(sad, _mm_unpackhi_epi64(sad, sad))) - 16 * 128);
}

}  // namespace

void quantize_q8k_activations_avx2(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  constexpr int kBlock = static_cast<int>(kQ8KBlock);
  const int64_t blocks = K / kBlock;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undoes the packs' lane interleave
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    auto* codes = static_cast<int8_t*>(out) + m * q8k_row_bytes(K);
    auto* scales = const_cast<float*>(q8k_scales(out, K, m));
    auto* sums = const_cast<int16_t*>(q8k_sums(out, K, m));
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = row + b * kBlock;
      __m256 vmax = _mm256_setzero_ps(), unordered = _mm256_setzero_ps();
      for (int i = 0; i < kBlock; i += 8) {
        const __m256 v = _mm256_loadu_ps(xb + i);
        vmax = _mm256_max_ps(_mm256_and_ps(v, abs_mask), vmax);
        unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      }
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
      const float amax = _mm_cvtss_f32(m4);
      const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
      const __m256 vid = _mm256_set1_ps(id);
      int8_t* q = codes + b * kBlock;
      for (int i = 0; i < kBlock; i += 32) {
        const __m256i p01 = _mm256_packs_epi32(codes8(_mm256_loadu_ps(xb + i), vid), codes8(_mm256_loadu_ps(xb + i + 8), vid));
        const __m256i p23 = _mm256_packs_epi32(codes8(_mm256_loadu_ps(xb + i + 16), vid), codes8(_mm256_loadu_ps(xb + i + 24), vid));
        const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23), order);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), bytes);
        sums[b * 16 + i / 16] = sum16(_mm256_castsi256_si128(bytes));
        sums[b * 16 + i / 16 + 1] = sum16(_mm256_extracti128_si256(bytes, 1));
      }
      const bool has_nan = _mm256_movemask_ps(unordered) != 0;
      scales[b] = has_nan ? std::numeric_limits<float>::quiet_NaN() : amax != 0.0f ? 1.0f / id : 0.0f;
    }
    std::memset(codes + K, 0, static_cast<size_t>(q8k_codes_stride(K) - K));
    for (int64_t b = blocks; b < q8k_scales_stride(K); ++b) scales[b] = 0.0f;
    for (int64_t g = K / kQ8KGroup; g < q8k_sums_stride(K); ++g) sums[g] = 0;
  }
}

}  // namespace lemma::kernels::x86
