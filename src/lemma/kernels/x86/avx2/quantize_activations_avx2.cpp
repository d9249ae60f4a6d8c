// x -> int8 activation blocks (int8_activations.h) with AVX2: one 32-value block is four ymm.
// Same bytes as quantize_activations_reference (see the AVX-512 version for the NaN rules).
#include <immintrin.h>

#include <cstring>
#include <limits>

#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/x86/int8_kernels.h"

namespace lemma::kernels::x86 {

namespace {

// 8 values -> 8 int32 codes + 128.
__m256i codes8(__m256 v, __m256 id) {
  __m256 s = _mm256_mul_ps(v, id);
  s = _mm256_and_ps(s, _mm256_cmp_ps(s, s, _CMP_ORD_Q));  // NaN -> 0
  s = _mm256_min_ps(_mm256_max_ps(s, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  return _mm256_add_epi32(_mm256_cvtps_epi32(s), _mm256_set1_epi32(128));
}

}  // namespace

void quantize_activations_avx2(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t blocks = K / kInt8ActivationBlock;
  auto* base = static_cast<uint8_t*>(out);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undoes the packs' lane interleave
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    uint8_t* codes = base + m * int8_row_bytes(K);
    auto* scales = reinterpret_cast<float*>(codes + int8_codes_stride(K));
    for (int64_t b = 0; b < blocks; ++b) {
      __m256 v[4];
      __m256 vmax = _mm256_setzero_ps(), unordered = _mm256_setzero_ps();
      for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(row + b * 32 + 8 * i);
        vmax = _mm256_max_ps(_mm256_and_ps(v[i], abs_mask), vmax);  // x first: NaN is ignored
        unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v[i], v[i], _CMP_UNORD_Q));
      }
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
      const float amax = _mm_cvtss_f32(m4);
      const float d = amax / 127.0f;
      const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
      const __m256i p01 = _mm256_packs_epi32(codes8(v[0], id), codes8(v[1], id));  // 1..255 fit int16
      const __m256i p23 = _mm256_packs_epi32(codes8(v[2], id), codes8(v[3], id));
      const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + b * 32), bytes);
      const bool has_nan = _mm256_movemask_ps(unordered) != 0;
      scales[b] = has_nan ? std::numeric_limits<float>::quiet_NaN() : _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    }
    std::memset(codes + K, 128, static_cast<size_t>(int8_codes_stride(K) - K));
    for (int64_t b = blocks; b < int8_scales_stride(K); ++b) scales[b] = 0.0f;
  }
}

}  // namespace lemma::kernels::x86
