// Scalar oracles for the int8-activation matmul (int8_activations.h): the quantiser and the block
// dot products, written as the plain loops the layout comment describes. The SIMD kernels must give
// these bits.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

namespace {

constexpr int kBlock = static_cast<int>(kInt8ActivationBlock);

// The signed codes of one 32-value weight block and its f16 scale (the first 2 bytes in all three).
struct WeightBlock {
  float d;
  int q[kBlock];
};

template <DType T>
WeightBlock weight_block(const uint8_t* row, int64_t b) {
  WeightBlock w{};
  uint16_t d_bits;
  if constexpr (T == DType::kQ8_0) {
    BlockQ8_0 block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(block)), sizeof(block));
    d_bits = block.d;
    for (int j = 0; j < kBlock; ++j) w.q[j] = block.qs[j];
  } else if constexpr (T == DType::kQ4_0) {
    BlockQ4_0 block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(block)), sizeof(block));
    d_bits = block.d;
    for (int j = 0; j < kBlock / 2; ++j) {
      w.q[j] = (block.qs[j] & 0x0F) - 8;
      w.q[j + kBlock / 2] = (block.qs[j] >> 4) - 8;
    }
  } else {
    static_assert(T == DType::kQ5_0);
    BlockQ5_0 block;
    std::memcpy(&block, row + b * static_cast<int64_t>(sizeof(block)), sizeof(block));
    d_bits = block.d;
    uint32_t qh;
    std::memcpy(&qh, block.qh, sizeof(qh));
    for (int j = 0; j < kBlock / 2; ++j) {
      w.q[j] = ((block.qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4)) - 16;
      w.q[j + kBlock / 2] = ((block.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4)) - 16;
    }
  }
  w.d = f16_to_f32(d_bits);
  return w;
}

template <DType T>
void matmul_int8(const MatmulArgs& a) {
  const int64_t blocks = a.K / kBlock;
  for (int64_t m = 0; m < a.M; ++m) {
    const uint8_t* codes = int8_codes(a.xq, a.K, m);
    const float* scales = int8_scales(a.xq, a.K, m);
    for (int64_t n = 0; n < a.N; ++n) {
      const auto* row = static_cast<const uint8_t*>(a.w) + n * a.w_row_bytes;
      float acc[16] = {};
      for (int64_t b = 0; b < blocks; ++b) {
        const WeightBlock w = weight_block<T>(row, b);
        const float scale = w.d * scales[b];
        float* lanes = acc + 8 * (b % 2);
        for (int j = 0; j < 8; ++j) {
          int32_t sum = 0;
          for (int t = 4 * j; t < 4 * j + 4; ++t) sum += (static_cast<int>(codes[b * kBlock + t]) - 128) * w.q[t];
          lanes[j] = std::fma(scale, static_cast<float>(sum), lanes[j]);
        }
      }
      float s8[8], s4[4], s2[2];
      for (int i = 0; i < 8; ++i) s8[i] = acc[i] + acc[i + 8];
      for (int i = 0; i < 4; ++i) s4[i] = s8[i] + s8[i + 4];
      for (int i = 0; i < 2; ++i) s2[i] = s4[i] + s4[i + 2];
      const float y = s2[0] + s2[1];
      a.y[m * a.y_stride + n] = a.bias != nullptr ? y + a.bias[n] : y;
    }
  }
}

}  // namespace

void quantize_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t blocks = K / kBlock;
  auto* base = static_cast<uint8_t*>(out);
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    uint8_t* codes = base + m * int8_row_bytes(K);
    auto* scales = reinterpret_cast<float*>(codes + int8_codes_stride(K));
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = row + b * kBlock;
      float amax = 0.0f;
      bool has_nan = false;
      for (int j = 0; j < kBlock; ++j) {
        amax = std::max(amax, std::fabs(xb[j]));  // ignores NaN (std::max keeps its first argument)
        has_nan = has_nan || std::isnan(xb[j]);
      }
      const float d = amax / 127.0f;
      const float id = amax != 0.0f ? 127.0f / amax : 0.0f;  // llama.cpp's x86 rule; inf for subnormal amax
      for (int j = 0; j < kBlock; ++j) {
        float v = xb[j] * id;
        if (std::isnan(v)) v = 0.0f;
        v = std::min(std::max(v, -127.0f), 127.0f);
        codes[b * kBlock + j] = static_cast<uint8_t>(static_cast<int>(std::nearbyint(v)) + 128);
      }
      // A NaN anywhere in the block makes its scale NaN, so every output that reads it is NaN.
      scales[b] = has_nan ? std::numeric_limits<float>::quiet_NaN() : f16_to_f32(f32_to_f16(d));
    }
    std::memset(codes + K, 128, static_cast<size_t>(int8_codes_stride(K) - K));
    std::fill(scales + blocks, scales + int8_scales_stride(K), 0.0f);
  }
}

void matmul_q8_0_int8_reference(const MatmulArgs& a) { matmul_int8<DType::kQ8_0>(a); }
void matmul_q4_0_int8_reference(const MatmulArgs& a) { matmul_int8<DType::kQ4_0>(a); }
void matmul_q5_0_int8_reference(const MatmulArgs& a) { matmul_int8<DType::kQ5_0>(a); }

}  // namespace lemma::kernels
