#include "lemma/kernels/reference/reference_kernels.h"

#include "lemma/kernels/dequantize.h"

namespace lemma::kernels {

namespace {
constexpr int64_t kChunk = 256;  // a multiple of every block size
constexpr int64_t kRowsPerPass = 16;
}  // namespace

void matmul_reference(DType weight, const MatmulArgs& a) {
  const DequantizeFn dequantize = dequantize_fn(weight);
  const DTypeInfo& info = dtype_info(weight);
  const auto block_elements = static_cast<int64_t>(info.block_elements);
  const auto block_bytes = static_cast<int64_t>(info.block_bytes);
  float w_chunk[kChunk];
  for (int64_t n = 0; n < a.N; ++n) {
    const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
    for (int64_t m0 = 0; m0 < a.M; m0 += kRowsPerPass) {
      const int64_t rows = a.M - m0 < kRowsPerPass ? a.M - m0 : kRowsPerPass;
      float acc[kRowsPerPass] = {};
      for (int64_t k0 = 0; k0 < a.K; k0 += kChunk) {
        const int64_t len = a.K - k0 < kChunk ? a.K - k0 : kChunk;
        dequantize(row + k0 / block_elements * block_bytes, w_chunk, len);
        for (int64_t i = 0; i < rows; ++i) {
          const float* x = a.x + (m0 + i) * a.x_stride + k0;
          float sum = acc[i];
          for (int64_t k = 0; k < len; ++k) sum += x[k] * w_chunk[k];
          acc[i] = sum;
        }
      }
      for (int64_t i = 0; i < rows; ++i) {
        a.y[(m0 + i) * a.y_stride + n] = a.bias != nullptr ? acc[i] + a.bias[n] : acc[i];
      }
    }
  }
}

}  // namespace lemma::kernels
