// y = x W^T for block-quantized weights with AVX-512: each W row is decoded 256 values at a time by
// the scalar reference decoder (bit-exact with ggml) into a stack buffer, then up to 16 rows of x
// are dotted with it using 16-lane FMAs. Batch invariance: every y[m, n] is one 16-lane accumulator
// fed in k order (chunks of 256, steps of 16, masked tail) then the fixed horizontal sum.
#include <immintrin.h>

#include "lemma/kernels/x86/x86_kernels.h"
#include "lemma/kernels/x86/horizontal_sum.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kChunk = 256;  // a multiple of every block size
constexpr int64_t kRowsPerPass = 16;

void prefetch_bytes(const uint8_t* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
}

}  // namespace

void matmul_dequant_avx512(const MatmulArgs& a, RowDecoder decode, int64_t block_elements,
                           int64_t block_bytes) {
  alignas(64) float w[kChunk];
  for (int64_t n = 0; n < a.N; ++n) {
    const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
    for (int64_t m0 = 0; m0 < a.M; m0 += kRowsPerPass) {
      const int64_t rows = a.M - m0 < kRowsPerPass ? a.M - m0 : kRowsPerPass;
      __m512 acc[kRowsPerPass];
      for (int64_t i = 0; i < rows; ++i) acc[i] = _mm512_setzero_ps();
      for (int64_t k0 = 0; k0 < a.K; k0 += kChunk) {
        const int64_t len = a.K - k0 < kChunk ? a.K - k0 : kChunk;
        const uint8_t* src = row + k0 / block_elements * block_bytes;
        // Decode is bound by reading W: while this chunk is decoded, fetch the same chunk of the
        // next row (first pass only; later passes over this row find it in cache).
        if (m0 == 0 && n + 1 < a.N) prefetch_bytes(src + a.w_row_bytes, len / block_elements * block_bytes);
        decode(src, w, len);
        for (int64_t i = 0; i < rows; ++i) {
          const float* x = a.x + (m0 + i) * a.x_stride + k0;
          __m512 sum = acc[i];
          int64_t k = 0;
          for (; k + 16 <= len; k += 16) sum = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), _mm512_load_ps(w + k), sum);
          if (k < len) {
            const __mmask16 mask = static_cast<__mmask16>((1u << (len - k)) - 1u);
            sum = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, x + k), _mm512_maskz_loadu_ps(mask, w + k), sum);
          }
          acc[i] = sum;
        }
      }
      for (int64_t i = 0; i < rows; ++i) {
        const float s = reduce16(acc[i]);
        a.y[(m0 + i) * a.y_stride + n] = a.bias != nullptr ? s + a.bias[n] : s;
      }
    }
  }
}

}  // namespace lemma::kernels::x86
