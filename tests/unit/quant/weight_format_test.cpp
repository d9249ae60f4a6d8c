// lemma's int8/int4 weight formats: spec parsing, round-trip error bounds for every combination of
// bits x symmetry x group, code layout, and the rows that cannot take a format.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/quant/weight_format.h"

namespace lemma::quant {
namespace {

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed, float offset) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(offset, 0.05f);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(WeightQuantSpec, ParsesNamesAndDefaults) {
  EXPECT_EQ(parse_weight_quant_spec("int8"), (WeightQuantSpec{8, true, 0}));
  EXPECT_EQ(parse_weight_quant_spec("int4"), (WeightQuantSpec{4, true, 128}));
  EXPECT_EQ(parse_weight_quant_spec("int4-g32-asym"), (WeightQuantSpec{4, false, 32}));
  EXPECT_EQ(parse_weight_quant_spec("int8-g64"), (WeightQuantSpec{8, true, 64}));
  EXPECT_EQ(parse_weight_quant_spec("int4-channel-sym"), (WeightQuantSpec{4, true, 0}));
  EXPECT_FALSE(parse_weight_quant_spec("int3"));
  EXPECT_FALSE(parse_weight_quant_spec("int4-g16"));
  EXPECT_FALSE(parse_weight_quant_spec("int4-asym-g32"));
  EXPECT_FALSE(parse_weight_quant_spec("q4_0"));
  for (const char* s : {"int8-channel-sym", "int4-g128-asym", "int8-g32-sym"}) {
    EXPECT_EQ(parse_weight_quant_spec(s)->to_string(), s);
  }
  EXPECT_THROW(validate(WeightQuantSpec{6, true, 32}), InvalidArgument);
  EXPECT_THROW(validate(WeightQuantSpec{4, true, 48}), InvalidArgument);
}

struct Case {
  int bits;
  bool symmetric;
  int64_t group;
};

class WeightRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(WeightRoundTrip, ErrorWithinTheGroupStep) {
  const Case c = GetParam();
  const WeightQuantSpec spec{c.bits, c.symmetric, c.group};
  const int64_t rows = 24, cols = 256;
  // An offset makes asymmetric groups use their zero point.
  const auto x = random_matrix(rows, cols, 7, c.symmetric ? 0.0f : 0.03f);
  const auto w = quantize_weight(x, rows, cols, spec);
  ASSERT_EQ(static_cast<int64_t>(w.qweight.size()), rows * (c.bits == 8 ? cols : cols / 2));
  ASSERT_EQ(static_cast<int64_t>(w.scales.size()), rows * (cols / spec.group_for(cols)));
  ASSERT_EQ(w.zeros.size(), c.symmetric ? 0u : w.scales.size());
  const auto y = dequantize_weight(w);
  const int64_t group = spec.group_for(cols);
  double sum_sq = 0, sum_err = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < cols / group; ++g) {
      float lo = 0, hi = 0;
      for (int64_t i = 0; i < group; ++i) {
        lo = std::min(lo, x[r * cols + g * group + i]);
        hi = std::max(hi, x[r * cols + g * group + i]);
      }
      const float amax = std::max(-lo, hi);
      const float step = !c.symmetric ? (hi - lo) / static_cast<float>(spec.max_code())
                         : c.bits == 8 ? amax / 127.0f : amax / 8.0f;
      // Half a step plus the f16 rounding of the scale; int4 symmetric reaches only +7 steps on the
      // side opposite its largest value, and asymmetric adds the rounding of the integer zero
      // point: a full step there.
      const bool half = c.symmetric && c.bits == 8;
      float bound = step * ((half ? 0.5f : 1.0f) + static_cast<float>(spec.max_code() + 1) / 2048.0f);
      // Asymmetric groups search the range [t lo, t hi], t >= 0.70, for the least squared error:
      // values beyond it are clipped by at most 0.3 of the larger extreme.
      if (!c.symmetric) bound += 0.3f * amax;
      // ... and never do worse than the plain min/max range (f16 scale, integer zero point) in the
      // error it minimises: squared errors weighted by rms(group) + |x|.
      double group_err = 0, minmax_err = 0, group_sq = 0;
      for (int64_t i = 0; i < group; ++i) group_sq += double(x[r * cols + g * group + i]) * x[r * cols + g * group + i];
      const double rms = std::sqrt(group_sq / static_cast<double>(group));
      const float minmax_scale = kernels::f16_to_f32(kernels::f32_to_f16((hi - lo) / static_cast<float>(spec.max_code())));
      const int minmax_zero =
          minmax_scale == 0 ? 0 : std::clamp(static_cast<int>(std::nearbyint(-lo / minmax_scale)), 0, spec.max_code());
      for (int64_t i = 0; i < group; ++i) {
        const size_t k = static_cast<size_t>(r * cols + g * group + i);
        ASSERT_LE(std::fabs(x[k] - y[k]), bound * 1.0001f) << spec.to_string() << " row " << r << " col " << g * group + i;
        sum_sq += double(x[k]) * x[k];
        sum_err += double(x[k] - y[k]) * (x[k] - y[k]);
        group_err += (rms + std::fabs(x[k])) * double(x[k] - y[k]) * (x[k] - y[k]);
        if (minmax_scale != 0) {
          const int q = std::clamp(static_cast<int>(std::nearbyint(x[k] / minmax_scale)) + minmax_zero, 0, spec.max_code());
          const double e = double(minmax_scale * static_cast<float>(q - minmax_zero)) - x[k];
          minmax_err += (rms + std::fabs(x[k])) * e * e;
        }
      }
      if (!c.symmetric) {
        EXPECT_LE(group_err, minmax_err * (1 + 1e-6)) << spec.to_string() << " row " << r << " group " << g;
      }
    }
  }
  const double rel_rms = std::sqrt(sum_err / sum_sq);
  EXPECT_LT(rel_rms, c.bits == 8 ? 0.01 : 0.2) << spec.to_string();
}

INSTANTIATE_TEST_SUITE_P(
    AllFormats, WeightRoundTrip,
    ::testing::Values(Case{8, true, 0}, Case{8, true, 32}, Case{8, true, 64}, Case{8, true, 128},
                      Case{8, false, 0}, Case{8, false, 32}, Case{8, false, 64}, Case{8, false, 128},
                      Case{4, true, 0}, Case{4, true, 32}, Case{4, true, 64}, Case{4, true, 128},
                      Case{4, false, 0}, Case{4, false, 32}, Case{4, false, 64}, Case{4, false, 128}),
    [](const auto& info) {
      return "int" + std::to_string(info.param.bits) + (info.param.symmetric ? "_sym_" : "_asym_") +
             (info.param.group == 0 ? std::string("channel") : "g" + std::to_string(info.param.group));
    });

TEST(WeightFormat, SmallerGroupsAreMoreAccurate) {
  const int64_t rows = 16, cols = 512;
  auto x = random_matrix(rows, cols, 3, 0.0f);
  for (int64_t i = 0; i < rows * cols; i += 97) x[static_cast<size_t>(i)] *= 8.0f;  // outliers
  auto rms = [&](int64_t group) {
    const auto w = quantize_weight(x, rows, cols, {4, true, group});
    const auto y = dequantize_weight(w);
    double e = 0;
    for (size_t i = 0; i < x.size(); ++i) e += double(x[i] - y[i]) * (x[i] - y[i]);
    return e;
  };
  EXPECT_LT(rms(32), rms(128));
  EXPECT_LT(rms(128), rms(0));
}

TEST(WeightFormat, Int4CodesArePackedLowNibbleFirst) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;  // the largest magnitude: scale -8 / -8 = 1, code -8 -> nibble 0
  x[1] = 3.0f;   // code 3 -> nibble 11
  x[2] = 8.0f;   // as large as x[0] but later: code 8 clamps to 7 -> nibble 15
  const auto w = quantize_weight(x, 1, 32, {4, true, 32});
  EXPECT_EQ(kernels::f16_to_f32(w.scales[0]), 1.0f);
  EXPECT_EQ(w.qweight[0], 0xB0);
  EXPECT_EQ(w.qweight[1] & 0xF, 0xF);
  EXPECT_EQ(w.qweight[2], 0x88);  // zeros -> code 0 -> nibble 8
}

TEST(WeightFormat, AsymmetricZeroPointMakesZeroExact) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = 0.5f + 0.01f * static_cast<float>(i);
  x[3] = 0.0f;
  x[4] = -0.1f;
  const auto w = quantize_weight(x, 1, 32, {4, false, 32});
  const auto y = dequantize_weight(w);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_GT(w.zeros[0], 0);
}

TEST(WeightFormat, RejectsRowsThatDoNotFillGroups) {
  EXPECT_FALSE(fits({4, true, 32}, 172));
  EXPECT_TRUE(fits({8, true, 0}, 172));
  EXPECT_FALSE(fits({4, true, 0}, 171));  // int4 per channel needs an even row
  std::vector<float> x(2 * 172, 1.0f);
  EXPECT_THROW(quantize_weight(x, 2, 172, {8, true, 32}), InvalidArgument);
  EXPECT_THROW(quantize_weight(x, 3, 172, {8, true, 0}), InvalidArgument);  // wrong value count
}

TEST(WeightFormat, AllZeroGroupsDequantizeToZero) {
  std::vector<float> x(64, 0.0f);
  for (const bool sym : {true, false}) {
    for (const int bits : {8, 4}) {
      const auto y = dequantize_weight(quantize_weight(x, 1, 64, {bits, sym, 32}));
      for (float v : y) EXPECT_EQ(v, 0.0f);
    }
  }
}

}  // namespace
}  // namespace lemma::quant
