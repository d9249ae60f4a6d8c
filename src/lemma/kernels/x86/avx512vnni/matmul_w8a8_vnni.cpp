// W8A8 with AVX-512 VNNI: up to 4 rows of x are quantised to int8 into a stack buffer (row stride
// padded to 64 bytes with zeros, so the last odd block can be read as a full zmm), then every W row
// is streamed once per tile: two 32-value blocks make one zmm of unsigned weight bytes (q + 128),
// and vpdpbusd adds 4 products per int32 lane. sum((q_w + 128) * q_x) - 128 * sum(q_x) is the
// exact integer dot product, so lanes may be summed in any order.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/kernels/x86/int8_kernels.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kTileRows = 4;
constexpr int64_t kBufferBytes = 64 * 1024;  // quantised x of one tile

struct QuantisedRow {
  float scale;  // sx = amax / 127
  int32_t sum;  // sum of the codes
};

// x[0, K) -> q[0, padded) (zeros after K); K a multiple of 32.
QuantisedRow quantise_row(const float* x, int64_t K, int64_t padded, int8_t* q) {
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  __m512 vmax = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 16) vmax = _mm512_max_ps(vmax, _mm512_and_ps(_mm512_loadu_ps(x + k), abs_mask));
  const float amax = _mm512_reduce_max_ps(vmax);
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
  const __m512 vid = _mm512_set1_ps(id);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  __m512i vsum = _mm512_setzero_si512();
  for (int64_t k = 0; k < K; k += 16) {
    __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + k), vid));  // round half to even
    v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
    vsum = _mm512_add_epi32(vsum, v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), _mm512_cvtepi32_epi8(v));
  }
  if (padded > K) std::memset(q + K, 0, static_cast<size_t>(padded - K));
  return {amax / 127.0f, _mm512_reduce_add_epi32(vsum)};
}

}  // namespace

void matmul_w8a8_avx512vnni(const MatmulArgs& a) {
  if (a.K > kW8A8MaxK) return write_nan_outputs(a);  // outside the format (lemma_int_blocks.h)
  alignas(64) int8_t xq[kBufferBytes];
  const int64_t padded = (a.K + 63) / 64 * 64;
  const int64_t tile = padded * kTileRows <= kBufferBytes ? kTileRows : 1;
  const int64_t blocks = a.K / kIntBlock;
  for (int64_t m0 = 0; m0 < a.M; m0 += tile) {
    const int64_t rows = a.M - m0 < tile ? a.M - m0 : tile;
    QuantisedRow qr[kTileRows];
    for (int64_t i = 0; i < rows; ++i) qr[i] = quantise_row(a.x + (m0 + i) * a.x_stride, a.K, padded, xq + i * padded);
    for (int64_t n = 0; n < a.N; ++n) {
      const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
      __m512i acc[kTileRows];
      for (int64_t i = 0; i < rows; ++i) acc[i] = _mm512_setzero_si512();
      int64_t b = 0;
      for (; b + 2 <= blocks; b += 2) {
        const auto* b0 = row + b * static_cast<int64_t>(sizeof(BlockW8A8)) + 2;
        const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0));
        const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + sizeof(BlockW8A8)));
        const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
        for (int64_t i = 0; i < rows; ++i) {
          acc[i] = _mm512_dpbusd_epi32(acc[i], w, _mm512_load_si512(xq + i * padded + b * kIntBlock));
        }
      }
      if (b < blocks) {  // one block left: upper half zero (and x is zero-padded there)
        const auto* b0 = row + b * static_cast<int64_t>(sizeof(BlockW8A8)) + 2;
        const __m512i w = _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0)));
        for (int64_t i = 0; i < rows; ++i) {
          acc[i] = _mm512_dpbusd_epi32(acc[i], w, _mm512_load_si512(xq + i * padded + b * kIntBlock));
        }
      }
      uint16_t d_bits;
      std::memcpy(&d_bits, row, 2);
      const float d = _cvtsh_ss(d_bits);
      for (int64_t i = 0; i < rows; ++i) {
        const int32_t isum = _mm512_reduce_add_epi32(acc[i]) - 128 * qr[i].sum;
        const float y = static_cast<float>(isum) * (qr[i].scale * d);
        a.y[(m0 + i) * a.y_stride + n] = a.bias != nullptr ? y + a.bias[n] : y;
      }
    }
  }
}

}  // namespace lemma::kernels::x86
