// Q8_0 / Q4_0 quantizers: round-trip error bounds on random data, ggml's rounding rules on crafted
// blocks, and the error paths.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/quant/ggml_quantize.h"

namespace lemma::quant {
namespace {

std::vector<float> random_values(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> blocks(*dtype_bytes(type, static_cast<uint64_t>(n)));
  quantize_row_gguf(type, x.data(), blocks.data(), n);
  std::vector<float> y(x.size());
  kernels::dequantize_row(type, blocks.data(), y.data(), n);
  return y;
}

float block_amax(const std::vector<float>& x, size_t block) {
  float amax = 0.0f;
  for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[block * 32 + j]));
  return amax;
}

TEST(GgmlQuantize, Q8_0RoundTripWithinHalfAStep) {
  for (const float scale : {1e-3f, 0.02f, 1.0f, 300.0f}) {
    const auto x = random_values(32 * 64, 1, scale);
    const auto y = round_trip(DType::kQ8_0, x);
    for (size_t i = 0; i < x.size(); ++i) {
      const float step = block_amax(x, i / 32) / 127.0f;
      // Half a step, plus the f16 rounding of the scale times the largest code: 2^-11 relative, or
      // 2^-25 absolute where the scale is an f16 subnormal.
      const float scale_error = std::max(step / 2048.0f, 0x1p-25f);
      ASSERT_LE(std::fabs(x[i] - y[i]), 0.5f * step + 127.0f * scale_error) << "scale " << scale << " i " << i;
    }
  }
}

TEST(GgmlQuantize, Q4_0RoundTripWithinOneStep) {
  for (const float scale : {1e-3f, 0.02f, 1.0f, 300.0f}) {
    const auto x = random_values(32 * 64, 2, scale);
    const auto y = round_trip(DType::kQ4_0, x);
    double sum_sq = 0, sum_err = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float step = block_amax(x, i / 32) / 8.0f;
      // The far end of the range (-max) maps to code 15, one full step short; elsewhere half a step.
      const float scale_error = std::max(step / 2048.0f, 0x1p-25f);
      ASSERT_LE(std::fabs(x[i] - y[i]), step + 8.0f * scale_error) << "scale " << scale << " i " << i;
      sum_sq += double(x[i]) * x[i];
      sum_err += double(x[i] - y[i]) * (x[i] - y[i]);
    }
    EXPECT_LT(std::sqrt(sum_err / sum_sq), 0.15) << "relative RMS error, scale " << scale;
  }
}

TEST(GgmlQuantize, Q8_0RoundsHalvesAwayFromZeroWithTheF32Scale) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1 exactly
  x[1] = 2.5f;    // roundf: 3 (round-half-even would give 2)
  x[2] = -2.5f;   // -3
  x[3] = 0.49f;
  kernels::BlockQ8_0 b;
  quantize_row_q8_0(x.data(), &b, 32);
  EXPECT_EQ(b.d, kernels::f32_to_f16(1.0f));
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 3);
  EXPECT_EQ(b.qs[2], -3);
  EXPECT_EQ(b.qs[3], 0);
}

TEST(GgmlQuantize, Q4_0TakesTheSignedMaximumAndPacksHalves) {
  std::vector<float> x(32, 0.0f);
  x[5] = -16.0f;  // largest magnitude, negative: d = -16 / -8 = 2
  x[20] = 16.0f;  // same magnitude later: ignored for d; code = trunc(8 + 8.5) = 16 -> clamped 15
  x[0] = 3.0f;    // 1.5 + 8.5 = 10
  kernels::BlockQ4_0 b;
  quantize_row_q4_0(x.data(), &b, 32);
  EXPECT_EQ(kernels::f16_to_f32(b.d), 2.0f);
  EXPECT_EQ(b.qs[5] & 0xF, 0);       // -16 / 2 + 8.5 = 0.5 -> 0
  EXPECT_EQ(b.qs[4] >> 4, 15);       // value 20 is the high nibble of byte 4
  EXPECT_EQ(b.qs[0] & 0xF, 10);
  EXPECT_EQ(b.qs[1] & 0xF, 8);       // zeros -> code 8
}

TEST(GgmlQuantize, AllZeroBlocksGiveZeroScale) {
  std::vector<float> x(64, 0.0f);
  for (const DType type : {DType::kQ8_0, DType::kQ4_0}) {
    const auto y = round_trip(type, x);
    for (float v : y) EXPECT_EQ(v, 0.0f);
  }
}

TEST(GgmlQuantize, RejectsPartialBlocksAndUnknownTypes) {
  std::vector<float> x(40, 1.0f);
  std::vector<uint8_t> out(64);
  EXPECT_THROW(quantize_row_gguf(DType::kQ8_0, x.data(), out.data(), 40), InvalidArgument);
  EXPECT_THROW(quantize_row_gguf(DType::kQ4_K, x.data(), out.data(), 32), Unsupported);
  EXPECT_TRUE(can_quantize_gguf(DType::kQ4_0));
  EXPECT_FALSE(can_quantize_gguf(DType::kF16));
}

}  // namespace
}  // namespace lemma::quant
