// y = x W^T for block-quantized weights with AVX2: as matmul_dequant_avx512.cpp with 8 lanes.
// Chunks are whole blocks (multiples of 32), so k never needs a tail inside a chunk.
#include <immintrin.h>

#include "lemma/kernels/x86/x86_kernels.h"
#include "lemma/kernels/x86/horizontal_sum.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kChunk = 256;
constexpr int64_t kRowsPerPass = 8;

void prefetch_bytes(const uint8_t* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
}

}  // namespace

void matmul_dequant_avx2(const MatmulArgs& a, RowDecoder decode, int64_t block_elements, int64_t block_bytes) {
  alignas(32) float w[kChunk];
  for (int64_t n = 0; n < a.N; ++n) {
    const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
    for (int64_t m0 = 0; m0 < a.M; m0 += kRowsPerPass) {
      const int64_t rows = a.M - m0 < kRowsPerPass ? a.M - m0 : kRowsPerPass;
      __m256 acc[kRowsPerPass];
      for (int64_t i = 0; i < rows; ++i) acc[i] = _mm256_setzero_ps();
      for (int64_t k0 = 0; k0 < a.K; k0 += kChunk) {
        const int64_t len = a.K - k0 < kChunk ? a.K - k0 : kChunk;  // a multiple of 8 (whole blocks)
        const uint8_t* src = row + k0 / block_elements * block_bytes;
        // Decode is bound by reading W: while this chunk is decoded, fetch the same chunk of the
        // next row (first pass only; later passes over this row find it in cache).
        if (m0 == 0 && n + 1 < a.N) prefetch_bytes(src + a.w_row_bytes, len / block_elements * block_bytes);
        decode(src, w, len);
        for (int64_t i = 0; i < rows; ++i) {
          const float* x = a.x + (m0 + i) * a.x_stride + k0;
          __m256 sum = acc[i];
          for (int64_t k = 0; k < len; k += 8) sum = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_load_ps(w + k), sum);
          acc[i] = sum;
        }
      }
      for (int64_t i = 0; i < rows; ++i) {
        const float s = reduce8(acc[i]);
        a.y[(m0 + i) * a.y_stride + n] = a.bias != nullptr ? s + a.bias[n] : s;
      }
    }
  }
}

}  // namespace lemma::kernels::x86
