// W8A8 with AVX2 (no VNNI): up to 4 rows of x are quantised to int8 into a stack buffer, then each
// 32-value weight block (q + 128 stored) is turned back into signed q, multiplied as
// |q_x| * (q_w with q_x's sign) by vpmaddubsw (pairs stay within int16: 2 * 127 * 127 < 32768) and
// widened by vpmaddwd into int32 lanes. Exact integer sums, so bits equal the reference's.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/kernels/x86/int8_kernels.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kTileRows = 4;
constexpr int64_t kBufferBytes = 64 * 1024;

// x[0, K) -> q[0, K); returns sx = amax / 127. K a multiple of 32.
float quantise_row(const float* x, int64_t K, int8_t* q) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 vmax = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; k += 8) vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float amax = 0.0f;
  for (float v : lanes) amax = v > amax ? v : amax;
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
  const __m256 vid = _mm256_set1_ps(id);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  for (int64_t k = 0; k < K; k += 8) {
    __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + k), vid));  // round half to even
    v = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
    alignas(32) int32_t ints[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(ints), v);
    for (int j = 0; j < 8; ++j) q[k + j] = static_cast<int8_t>(ints[j]);
  }
  return amax / 127.0f;
}

int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void matmul_w8a8_avx2(const MatmulArgs& a) {
  if (a.K > kW8A8MaxK) return write_nan_outputs(a);  // outside the format (lemma_int_blocks.h)
  alignas(32) int8_t xq[kBufferBytes];
  const int64_t tile = a.K * kTileRows <= kBufferBytes ? kTileRows : 1;
  const int64_t blocks = a.K / kIntBlock;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t m0 = 0; m0 < a.M; m0 += tile) {
    const int64_t rows = a.M - m0 < tile ? a.M - m0 : tile;
    float sx[kTileRows];
    for (int64_t i = 0; i < rows; ++i) sx[i] = quantise_row(a.x + (m0 + i) * a.x_stride, a.K, xq + i * a.K);
    for (int64_t n = 0; n < a.N; ++n) {
      const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
      __m256i acc[kTileRows];
      for (int64_t i = 0; i < rows; ++i) acc[i] = _mm256_setzero_si256();
      for (int64_t b = 0; b < blocks; ++b) {
        const auto* qs = row + b * static_cast<int64_t>(sizeof(BlockW8A8)) + 2;
        const __m256i w = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)), flip);
        for (int64_t i = 0; i < rows; ++i) {
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + i * a.K + b * kIntBlock));
          const __m256i prod = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(w, x));
          acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(prod, ones));
        }
      }
      uint16_t d_bits;
      std::memcpy(&d_bits, row, 2);
      const float d = _cvtsh_ss(d_bits);
      for (int64_t i = 0; i < rows; ++i) {
        const float y = static_cast<float>(hsum_epi32(acc[i])) * (sx[i] * d);
        a.y[(m0 + i) * a.y_stride + n] = a.bias != nullptr ? y + a.bias[n] : y;
      }
    }
  }
}

}  // namespace lemma::kernels::x86
