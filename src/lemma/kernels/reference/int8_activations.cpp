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
#include "lemma/kernels/reference/oracle_loops.h"
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
  oracle::for_each_output(a, [&](int64_t m, int64_t n) {
    const uint8_t* codes = int8_codes(a.xq, a.K, m);
    const float* scales = int8_scales(a.xq, a.K, m);
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
    float s8[8];
    for (int i = 0; i < 8; ++i) s8[i] = acc[i] + acc[i + 8];
    return oracle::tree_sum8(s8);
  });
}

}  // namespace

void quantize_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  // id = 127 / amax: llama.cpp's x86 rule.
  oracle::quantise_blocks<kBlock>(x, x_stride, M, K, [&](int64_t m, int64_t b, const int8_t* q, const oracle::QuantisedBlock& block) {
    uint8_t* codes = const_cast<uint8_t*>(int8_codes(out, K, m)) + b * kBlock;
    for (int j = 0; j < kBlock; ++j) codes[j] = static_cast<uint8_t>(q[j] + 128);
    const float d = block.amax / 127.0f;
    const_cast<float*>(int8_scales(out, K, m))[b] = block.has_nan ? std::numeric_limits<float>::quiet_NaN() : f16_to_f32(f32_to_f16(d));
  });
  for (int64_t m = 0; m < M; ++m) {  // padding: code 0 (+128), scale 0
    std::memset(const_cast<uint8_t*>(int8_codes(out, K, m)) + K, 128, static_cast<size_t>(int8_codes_stride(K) - K));
    auto* scales = const_cast<float*>(int8_scales(out, K, m));
    std::fill(scales + K / kBlock, scales + int8_scales_stride(K), 0.0f);
  }
}

void matmul_q8_0_int8_reference(const MatmulArgs& a) { matmul_int8<DType::kQ8_0>(a); }
void matmul_q4_0_int8_reference(const MatmulArgs& a) { matmul_int8<DType::kQ4_0>(a); }
void matmul_q5_0_int8_reference(const MatmulArgs& a) { matmul_int8<DType::kQ5_0>(a); }

}  // namespace lemma::kernels
