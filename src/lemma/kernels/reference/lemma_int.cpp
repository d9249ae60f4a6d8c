#include "lemma/kernels/reference/lemma_int.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/quant_blocks.h"

namespace lemma::kernels {

namespace {

template <typename Block>
Block block_at(const void* src, int64_t b) {
  Block block;
  std::memcpy(&block, static_cast<const uint8_t*>(src) + b * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return block;
}

}  // namespace

void decode_i8z32_reference(const void* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kIntBlock; ++b) {
    const auto block = block_at<BlockI8Z32>(src, b);
    const float d = f16_to_f32(block.d);
    for (int j = 0; j < kIntBlock; ++j) {
      dst[b * kIntBlock + j] = d * static_cast<float>(static_cast<int>(block.qs[j]) - static_cast<int>(block.z));
    }
  }
}

void decode_i4z32_reference(const void* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kIntBlock; ++b) {
    const auto block = block_at<BlockI4Z32>(src, b);
    const float d = f16_to_f32(block.d);
    const int z = block.z;
    for (int j = 0; j < kIntBlock / 2; ++j) {
      dst[b * kIntBlock + j] = d * static_cast<float>((block.qs[j] & 0xF) - z);
      dst[b * kIntBlock + j + 16] = d * static_cast<float>((block.qs[j] >> 4) - z);
    }
  }
}

void decode_w8a8_reference(const void* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kIntBlock; ++b) {
    const auto block = block_at<BlockW8A8>(src, b);
    const float d = f16_to_f32(block.d);
    for (int j = 0; j < kIntBlock; ++j) dst[b * kIntBlock + j] = d * static_cast<float>(static_cast<int>(block.qs[j]) - 128);
  }
}

void write_nan_outputs(const MatmulArgs& a) {
  for (int64_t m = 0; m < a.M; ++m)
    for (int64_t n = 0; n < a.N; ++n) a.y[m * a.y_stride + n] = std::numeric_limits<float>::quiet_NaN();
}

void matmul_w8a8_reference(const MatmulArgs& a) {
  if (a.K > kW8A8MaxK) return write_nan_outputs(a);
  const int64_t blocks = a.K / kIntBlock;
  for (int64_t m = 0; m < a.M; ++m) {
    const float* x = a.x + m * a.x_stride;
    float amax = 0.0f;
    for (int64_t k = 0; k < a.K; ++k) amax = std::max(amax, std::fabs(x[k]));
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    const float sx = amax / 127.0f;
    for (int64_t n = 0; n < a.N; ++n) {
      const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
      int32_t isum = 0;
      float d = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const auto block = block_at<BlockW8A8>(row, b);
        if (b == 0) d = f16_to_f32(block.d);
        for (int j = 0; j < kIntBlock; ++j) {
          const float scaled = x[b * kIntBlock + j] * id;
          const int q = std::clamp(static_cast<int>(std::nearbyint(scaled)), -127, 127);
          isum += q * (static_cast<int>(block.qs[j]) - 128);
        }
      }
      const float y = static_cast<float>(isum) * (sx * d);
      a.y[m * a.y_stride + n] = a.bias != nullptr ? y + a.bias[n] : y;
    }
  }
}

}  // namespace lemma::kernels
