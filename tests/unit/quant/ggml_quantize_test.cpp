// Q8_0 / Q4_0 quantizers: round-trip error bounds on random data, ggml's rounding rules on crafted
// blocks, and the error paths. IQ4_NL / IQ4_XS (lemma's own quantizer): every code the best one for
// the stored scale, errors below Q4_0's on the same data, sub-block scales in IQ4_XS.
#include <cmath>
#include <cstdio>
#include <cstring>
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

double relative_rms(const std::vector<float>& x, const std::vector<float>& y, size_t begin = 0, size_t end = 0) {
  if (end == 0) end = x.size();
  double e = 0, s = 0;
  for (size_t i = begin; i < end; ++i) e += (x[i] - y[i]) * (x[i] - y[i]), s += x[i] * x[i];
  return std::sqrt(e / s);
}

constexpr int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// The value a code decodes to is, for each x, the nearest of the 16 values the block's (or
// sub-block's) stored scale can give: y = scale * table[c], scale = y / table[c] for any y != 0.
void expect_nearest_codes(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& scales) {
  for (size_t i = 0; i < x.size(); ++i) {
    const float scale = scales[i / 32];
    float best = std::fabs(x[i] - scale * static_cast<float>(kTable[0]));
    for (int c = 1; c < 16; ++c) best = std::min(best, std::fabs(x[i] - scale * static_cast<float>(kTable[c])));
    ASSERT_LE(std::fabs(x[i] - y[i]), best * (1 + 1e-6f) + 1e-12f) << i;
  }
}

TEST(GgmlQuantize, Iq4NlCodesAreNearestAndBeatQ4_0) {
  const auto x = random_values(32 * 64, 21, 0.05f);
  std::vector<uint8_t> blocks(*dtype_bytes(DType::kIQ4_NL, x.size()));
  quantize_row_gguf(DType::kIQ4_NL, x.data(), blocks.data(), static_cast<int64_t>(x.size()));
  std::vector<float> y(x.size()), scales;
  kernels::dequantize_row(DType::kIQ4_NL, blocks.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t b = 0; b < x.size() / 32; ++b) {
    kernels::BlockIQ4_NL block;
    std::memcpy(&block, blocks.data() + b * sizeof(block), sizeof(block));
    scales.push_back(kernels::f16_to_f32(block.d));
  }
  expect_nearest_codes(x, y, scales);
  const double iq4 = relative_rms(x, y), q4 = relative_rms(x, round_trip(DType::kQ4_0, x));
  std::printf("Gaussian values, relative rms error: iq4_nl %.4f, q4_0 %.4f\n", iq4, q4);
  EXPECT_LT(iq4, q4);
  EXPECT_LT(iq4, 0.09);
  // A block's sign is kept whichever end its largest value lies on.
  std::vector<float> ramp(32);
  for (int j = 0; j < 32; ++j) ramp[j] = 0.01f * static_cast<float>(j - 8);
  const auto back = round_trip(DType::kIQ4_NL, ramp);
  EXPECT_LT(relative_rms(ramp, back), 0.1);
  EXPECT_GT(back[31], 0.2f);
  EXPECT_LT(back[0], -0.05f);
}

TEST(GgmlQuantize, Iq4XsScalesFollowEachSubBlock) {
  // Sub-blocks of very different magnitudes: each gets its own 6-bit scale.
  auto x = random_values(256 * 8, 22, 1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] *= 0.001f * static_cast<float>(1 + (i / 32) % 8 * 4);
  std::vector<uint8_t> blocks(*dtype_bytes(DType::kIQ4_XS, x.size()));
  quantize_row_gguf(DType::kIQ4_XS, x.data(), blocks.data(), static_cast<int64_t>(x.size()));
  std::vector<float> y(x.size()), scales;
  kernels::dequantize_row(DType::kIQ4_XS, blocks.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t b = 0; b < x.size() / 256; ++b) {
    kernels::BlockIQ4_XS block;
    std::memcpy(&block, blocks.data() + b * sizeof(block), sizeof(block));
    for (int s = 0; s < 8; ++s)
      scales.push_back(kernels::f16_to_f32(block.d) * static_cast<float>(kernels::iq4_xs_scale(block.scales_h, block.scales_l, s)));
  }
  expect_nearest_codes(x, y, scales);
  const double xs = relative_rms(x, y), nl = relative_rms(x, round_trip(DType::kIQ4_NL, x));
  std::printf("scaled Gaussian sub-blocks, relative rms error: iq4_xs %.4f, iq4_nl %.4f\n", xs, nl);
  EXPECT_LT(xs, 0.1);
  EXPECT_LT(xs, 1.15 * nl);  // 6-bit sub-block scales cost little against IQ4_NL's f16 ones
  for (size_t s = 0; s < x.size() / 32; ++s) EXPECT_LT(relative_rms(x, y, 32 * s, 32 * s + 32), 0.2) << "sub-block " << s;
}

TEST(GgmlQuantize, AllZeroBlocksGiveZeroScale) {
  std::vector<float> x(256, 0.0f);
  for (const DType type : {DType::kQ8_0, DType::kQ4_0, DType::kIQ4_NL, DType::kIQ4_XS}) {
    const auto y = round_trip(type, x);
    for (float v : y) EXPECT_EQ(v, 0.0f);
  }
}

TEST(GgmlQuantize, RejectsPartialBlocksAndUnknownTypes) {
  std::vector<float> x(40, 1.0f);
  std::vector<uint8_t> out(64);
  EXPECT_THROW(quantize_row_gguf(DType::kQ8_0, x.data(), out.data(), 40), InvalidArgument);
  EXPECT_THROW(quantize_row_gguf(DType::kIQ4_XS, x.data(), out.data(), 32), InvalidArgument);  // blocks of 256
  EXPECT_THROW(quantize_row_gguf(DType::kQ4_K, x.data(), out.data(), 32), Unsupported);
  EXPECT_TRUE(can_quantize_gguf(DType::kQ4_0));
  EXPECT_TRUE(can_quantize_gguf(DType::kF16));
  EXPECT_FALSE(can_quantize_gguf(DType::kF32));  // f32 is kept, not written by a quantizer
  EXPECT_FALSE(can_quantize_gguf(DType::kQ6_K));
}

// f16 / bf16 "quantization" is rounding to nearest even (ties to even), NaN kept a NaN.
TEST(GgmlQuantize, F16AndBf16RoundToNearestEven) {
  const std::vector<float> x = {1.0f, 1.0f + 0x1p-11f, 1.0f + 0x1p-8f, -3.5f, 70000.0f, std::nanf("")};
  std::vector<uint16_t> h(x.size()), b(x.size());
  quantize_row_gguf(DType::kF16, x.data(), h.data(), static_cast<int64_t>(x.size()));
  quantize_row_gguf(DType::kBF16, x.data(), b.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0x3C00);  // halfway between 1 and 1 + 2^-10: to the even one
  EXPECT_EQ(b[2], 0x3F80);  // halfway between 1 and 1 + 2^-7 in bf16: to the even one
  EXPECT_EQ(kernels::f16_to_f32(h[3]), -3.5f);
  EXPECT_EQ(h[4], 0x7C00);  // beyond f16's range: infinity
  EXPECT_TRUE(std::isnan(kernels::f16_to_f32(h[5])));
  EXPECT_TRUE(std::isnan(kernels::bf16_to_f32(b[5])));
}

}  // namespace
}  // namespace lemma::quant
