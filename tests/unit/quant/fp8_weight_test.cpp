// FP8 e4m3fn weights (issue 6 item 4, G18): the code table against the format's definition,
// round-to-nearest-even and saturation, per-tensor and 128x128 block scales on odd shapes, the
// read-back of what the packer wrote, and malformed scales rejected with the tensor's name.
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/quant/fp8_weight.h"

namespace lemma::quant {
namespace {

TEST(Fp8E4m3, CodesDecodeAsTheFormatDefines) {
  EXPECT_EQ(e4m3_to_f32(0x00), 0.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_EQ(e4m3_to_f32(0x07), 7.0f * std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_to_f32(0x08), std::ldexp(1.0f, -6));   // smallest normal
  EXPECT_EQ(e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_f32(0x3C), 1.5f);
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0xBE), -1.75f);  // sign, exponent 7 (2^0), mantissa 6/8
  EXPECT_EQ(e4m3_to_f32(0x46), 3.5f);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0xFF)));
  // Every finite code encodes back to itself.
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(f32_to_e4m3(e4m3_to_f32(static_cast<uint8_t>(c))), c == 0x80 ? 0x80 : c) << c;
  }
}

TEST(Fp8E4m3, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(f32_to_e4m3(1.0625f), 0x38);  // halfway between 1 and 1.125: even mantissa (1)
  EXPECT_EQ(f32_to_e4m3(1.1875f), 0x3A);  // halfway between 1.125 and 1.25: even (1.25)
  EXPECT_EQ(f32_to_e4m3(1.07f), 0x39);
  EXPECT_EQ(f32_to_e4m3(1.96875f), 0x40);  // halfway between 1.875 and 2: carries into the exponent
  EXPECT_EQ(f32_to_e4m3(1000.0f), 0x7E);
  EXPECT_EQ(f32_to_e4m3(-1000.0f), 0xFE);
  EXPECT_EQ(f32_to_e4m3(std::ldexp(1.0f, -11)), 0x00);       // a quarter of the smallest subnormal
  EXPECT_EQ(f32_to_e4m3(3.0f * std::ldexp(1.0f, -10)), 0x02);  // 1.5 subnormal steps: even (2)
  EXPECT_EQ(f32_to_e4m3(std::nanf("")), 0x7F);
}

std::vector<float> random_matrix(int64_t n, int64_t k, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> x(static_cast<size_t>(n * k));
  for (auto& v : x) v = dist(rng);
  return x;
}

TEST(Fp8Weight, PerTensorAndBlockScalesRoundTrip) {
  for (const auto& [n, k, block] : {std::tuple<int64_t, int64_t, int64_t>{64, 172, 0}, {200, 300, 128}, {5, 7, 128},
                                   {256, 128, 128}}) {
    SCOPED_TRACE(::testing::Message() << "[" << n << ", " << k << "] block " << block);
    auto x = random_matrix(n, k, static_cast<unsigned>(n * k));
    if (block > 0) x[0] *= 40.0f;  // an outlier only its own tile's scale sees
    const auto w = quantize_fp8(x, n, k, block);
    EXPECT_EQ(w.scales.size(), static_cast<size_t>(block == 0 ? 1 : ((n + 127) / 128) * ((k + 127) / 128)));
    const auto values = dequantize_fp8(w);
    for (size_t i = 0; i < x.size(); ++i) {
      // 3 mantissa bits: relative error <= 2^-4 for normals; absolute <= 2^-10 * scale below them.
      const float scale = w.scale_at(static_cast<int64_t>(i) / k, static_cast<int64_t>(i) % k);
      EXPECT_LE(std::abs(values[i] - x[i]), std::max(std::abs(x[i]) / 16.0f, scale * std::ldexp(1.0f, -10))) << i;
    }
    // Read back from tensors as a checkpoint holds them: the same codes and scales, bit for bit.
    const TensorView weight{w.codes.data(), DType::kF8E4M3, Shape{n, k}};
    const TensorView scale{w.scales.data(), DType::kF32,
                           block == 0 ? Shape{1} : Shape{w.block_rows(), w.block_cols()}};
    const auto back = read_fp8("model.layers.0.mlp.up_proj", weight, scale, block);
    EXPECT_EQ(back.codes, w.codes);
    EXPECT_EQ(back.scales, w.scales);
    const auto bf16 = fp8_to_bf16(back);
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(bf16[i], kernels::f32_to_bf16(values[i])) << i;
  }
}

TEST(Fp8Weight, MalformedScalesNameTheTensor) {
  const auto x = random_matrix(130, 140, 1);
  const auto w = quantize_fp8(x, 130, 140, 128);
  const TensorView weight{w.codes.data(), DType::kF8E4M3, Shape{130, 140}};
  try {
    read_fp8("model.layers.3.self_attn.k_proj", weight, TensorView{w.scales.data(), DType::kF32, Shape{1, 4}}, 128);
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.3.self_attn.k_proj.weight_scale_inv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 2]"), std::string::npos) << e.what();
  }
  const TensorView f16_weight{w.codes.data(), DType::kF16, Shape{130, 70}};
  EXPECT_THROW(read_fp8("x", f16_weight, TensorView{w.scales.data(), DType::kF32, Shape{2, 2}}, 128), FormatError);
}

}  // namespace
}  // namespace lemma::quant
