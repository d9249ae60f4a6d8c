// y = x W^T for block-quantized weights over the vector layer, once per ISA: each W row is decoded
// 256 values at a time by the scalar reference decoder (bit-exact with ggml) into a stack buffer,
// then up to kRowsPerPass rows of x are dotted with it by Vec::kWidth-lane FMAs. Batch invariance:
// every y[m, n] is one accumulator fed in k order (chunks of 256, steps of kWidth) then the ISA's
// fixed horizontal sum.
#include "lemma/kernels/x86/vec/vec.h"

namespace lemma::kernels::x86 {

namespace {

using F = Vec::F;
constexpr int64_t W = Vec::kWidth;
constexpr int64_t kChunk = 256;                        // a multiple of every block size
constexpr int64_t kRowsPerPass = Vec::kRegisters / 2;  // accumulators: half the register file

void prefetch_bytes(const uint8_t* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
}

}  // namespace

void simd::matmul_dequant(const MatmulArgs& a, RowDecoder decode, int64_t block_elements, int64_t block_bytes) {
  alignas(64) float w[kChunk];
  for (int64_t n = 0; n < a.N; ++n) {
    const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
    for (int64_t m0 = 0; m0 < a.M; m0 += kRowsPerPass) {
      const int64_t rows = a.M - m0 < kRowsPerPass ? a.M - m0 : kRowsPerPass;
      F acc[kRowsPerPass];
      for (int64_t i = 0; i < rows; ++i) acc[i] = Vec::zero();
      for (int64_t k0 = 0; k0 < a.K; k0 += kChunk) {
        const int64_t len = a.K - k0 < kChunk ? a.K - k0 : kChunk;  // whole blocks: a multiple of 32
        const uint8_t* src = row + k0 / block_elements * block_bytes;
        // Decode is bound by reading W: while this chunk is decoded, fetch the same chunk of the
        // next row (first pass only; later passes over this row find it in cache).
        if (m0 == 0 && n + 1 < a.N) prefetch_bytes(src + a.w_row_bytes, len / block_elements * block_bytes);
        decode(src, w, len);
        for (int64_t i = 0; i < rows; ++i) {
          const float* x = a.x + (m0 + i) * a.x_stride + k0;
          F sum = acc[i];
          for (int64_t k = 0; k < len; k += W) sum = Vec::fmadd(Vec::load(x + k), Vec::load_aligned(w + k), sum);
          acc[i] = sum;
        }
      }
      for (int64_t i = 0; i < rows; ++i) {
        const float s = Vec::reduce_add(acc[i]);
        a.y[(m0 + i) * a.y_stride + n] = a.bias != nullptr ? s + a.bias[n] : s;
      }
    }
  }
}

}  // namespace lemma::kernels::x86
