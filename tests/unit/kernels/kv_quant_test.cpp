// KV cache row encoding (G23): the e4m3 codec against its definition (every code, rounding ties,
// saturation), and int8 / fp8 / bf16 rows (scales, largest code, error bounds, zero and NaN rows).
#include "lemma/kernels/attention/kv_quant.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace lemma::kernels {
namespace {

// e4m3fn by its definition: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is
// subnormal; 0x7F / 0xFF are NaN.
double e4m3_definition(int code) {
  const int sign = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::nan("");
  const double magnitude = e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return sign ? -magnitude : magnitude;
}

TEST(KvQuant, E4m3DecodesEveryCodeByItsDefinition) {
  for (int code = 0; code < 256; ++code) {
    const double want = e4m3_definition(code);
    const float got = e4m3_to_float(static_cast<uint8_t>(code));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << code;
      continue;
    }
    EXPECT_EQ(got, static_cast<float>(want)) << code;
    // Every finite value encodes back to its own code (-0 keeps its sign bit).
    EXPECT_EQ(float_to_e4m3(got), code) << code;
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
}

TEST(KvQuant, E4m3RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(float_to_e4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);  // halfway 1.0 / 1.125: the even mantissa
  EXPECT_EQ(float_to_e4m3(1.1875f), 0x3A);  // halfway 1.125 / 1.25: the even mantissa
  EXPECT_EQ(float_to_e4m3(1.07f), 0x39);
  EXPECT_EQ(float_to_e4m3(0x1p-10f), 0x00);        // half the smallest subnormal: even (zero)
  EXPECT_EQ(float_to_e4m3(3 * 0x1p-10f), 0x02);    // 1.5 x smallest: even (2)
  EXPECT_EQ(float_to_e4m3(15 * 0x1p-10f), 0x08);   // rounds up into the smallest normal
  EXPECT_EQ(float_to_e4m3(464.0f), 0x7E);          // would round to 480 (NaN's code): saturates
  EXPECT_EQ(float_to_e4m3(1e30f), 0x7E);
  EXPECT_EQ(float_to_e4m3(-1e30f), 0xFE);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7F, 0x7F);
  // Random values get a nearest code (brute force over all finite codes).
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-12.0f, 9.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::exp2(exponent(rng)) * (i % 2 ? -1.0f : 1.0f);
    const double got = e4m3_to_float(float_to_e4m3(x));
    double best = INFINITY;
    for (int code = 0; code < 256; ++code)
      if (!std::isnan(e4m3_definition(code))) best = std::min(best, std::fabs(e4m3_definition(code) - x));
    ASSERT_EQ(std::fabs(got - x), best) << x;
  }
}

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(KvQuant, Int8RowsUseAbsmaxOver127) {
  for (int64_t n : {1, 7, 64, 80, 128}) {
    const auto x = random_row(n, static_cast<uint32_t>(n));
    std::vector<int8_t> codes(static_cast<size_t>(n));
    float scale = -1.0f;
    kv_encode_row(KvDtype::kInt8, x.data(), n, codes.data(), &scale);
    float absmax = 0.0f;
    for (float v : x) absmax = std::max(absmax, std::fabs(v));
    EXPECT_EQ(scale, absmax / 127.0f);
    std::vector<float> back(static_cast<size_t>(n));
    kv_decode_row(KvDtype::kInt8, codes.data(), scale, n, back.data());
    int largest = 0;
    for (int64_t i = 0; i < n; ++i) {
      largest = std::max(largest, std::abs(int{codes[static_cast<size_t>(i)]}));
      EXPECT_LE(std::fabs(back[i] - x[i]), scale * 0.5f * (1 + 1e-5f)) << n << " " << i;
    }
    EXPECT_EQ(largest, 127);
  }
}

TEST(KvQuant, Fp8RowsUseAbsmaxOver448) {
  for (int64_t n : {1, 9, 64, 128}) {
    const auto x = random_row(n, static_cast<uint32_t>(n + 50));
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    float scale = -1.0f;
    kv_encode_row(KvDtype::kFp8, x.data(), n, codes.data(), &scale);
    float absmax = 0.0f;
    for (float v : x) absmax = std::max(absmax, std::fabs(v));
    EXPECT_EQ(scale, absmax / 448.0f);
    std::vector<float> back(static_cast<size_t>(n));
    kv_decode_row(KvDtype::kFp8, codes.data(), scale, n, back.data());
    bool saw_max = false;
    for (int64_t i = 0; i < n; ++i) {
      saw_max |= (codes[static_cast<size_t>(i)] & 0x7F) == 0x7E;
      // 3 mantissa bits: half an ulp is 1/16 of the value in the normal range; subnormals
      // (below 2^-6 x scale) are off by at most half of 2^-9 x scale.
      const float bound = std::max(std::fabs(x[i]) / 16.0f, scale * 0x1p-10f) * (1 + 1e-5f);
      EXPECT_LE(std::fabs(back[i] - x[i]), bound) << n << " " << i;
    }
    EXPECT_TRUE(saw_max);
  }
}

TEST(KvQuant, Bf16RowsRoundToNearestEven) {
  // bf16 keeps 7 fraction bits: one ulp at 1.0 is 2^-7.
  const float x[] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.5f, 1.0f + 0x1p-8f + 0x1p-10f};
  uint16_t codes[5];
  kv_encode_row(KvDtype::kBf16, x, 5, codes, nullptr);
  float back[5];
  kv_decode_row(KvDtype::kBf16, codes, 0.0f, 5, back);  // bf16 ignores the scale
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 1.0f);                   // tie: even
  EXPECT_EQ(back[2], 1.0f + 0x1p-6f);         // tie: even (up)
  EXPECT_EQ(back[3], -2.5f);
  EXPECT_EQ(back[4], 1.0f + 0x1p-7f);         // above half an ulp: up
}

TEST(KvQuant, ZeroRowsHaveScaleZeroAndNonFiniteRowsReadBackAsNan) {
  for (KvDtype d : {KvDtype::kInt8, KvDtype::kFp8}) {
    const float zeros[4] = {0, 0, -0.0f, 0};
    uint8_t codes[4] = {9, 9, 9, 9};
    float scale = -1.0f, back[4];
    kv_encode_row(d, zeros, 4, codes, &scale);
    EXPECT_EQ(scale, 0.0f) << kv_dtype_name(d);
    kv_decode_row(d, codes, scale, 4, back);
    for (float v : back) EXPECT_EQ(v, 0.0f) << kv_dtype_name(d);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      const float row[4] = {1.0f, bad, 2.0f, -3.0f};
      kv_encode_row(d, row, 4, codes, &scale);
      EXPECT_TRUE(std::isnan(scale)) << kv_dtype_name(d) << " " << bad;
      kv_decode_row(d, codes, scale, 4, back);
      for (float v : back) EXPECT_TRUE(std::isnan(v)) << kv_dtype_name(d);
    }
  }
}

TEST(KvQuant, DtypeNamesAndSizes) {
  EXPECT_FALSE(parse_kv_dtype("auto"));  // resolved per model by the command line
  EXPECT_EQ(parse_kv_dtype("f32"), KvDtype::kF32);
  EXPECT_EQ(parse_kv_dtype("bf16"), KvDtype::kBf16);
  EXPECT_EQ(parse_kv_dtype("int8"), KvDtype::kInt8);
  EXPECT_EQ(parse_kv_dtype("fp8"), KvDtype::kFp8);
  EXPECT_FALSE(parse_kv_dtype("fp16"));
  EXPECT_FALSE(parse_kv_dtype(""));
  EXPECT_EQ(kv_element_bytes(KvDtype::kF32), 4);
  EXPECT_EQ(kv_element_bytes(KvDtype::kBf16), 2);
  EXPECT_EQ(kv_element_bytes(KvDtype::kInt8), 1);
  EXPECT_EQ(kv_element_bytes(KvDtype::kFp8), 1);
  EXPECT_FALSE(kv_dtype_has_scales(KvDtype::kBf16));
  EXPECT_TRUE(kv_dtype_has_scales(KvDtype::kFp8));
  for (KvDtype d : {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8})
    EXPECT_EQ(parse_kv_dtype(kv_dtype_name(d)), d);
}

}  // namespace
}  // namespace lemma::kernels
