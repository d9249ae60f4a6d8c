// RoPE frequencies for each scaling type against the formulas written out by hand, and the
// rotation itself (half-split vs interleaved layouts).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "lemma/model/layers/rope.h"
#include "lemma/model/rope_scaling.h"

namespace lemma {
namespace {

RopeConfig base_config(int64_t dim = 16) {
  RopeConfig c;
  c.theta = 10000.0;
  c.rotary_dim = dim;
  c.max_position_embeddings = 256;
  return c;
}

double plain(int64_t i, int64_t dim, double theta = 10000.0) {
  return std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
}

TEST(RopeScaling, DefaultAndLinear) {
  RopeConfig c = base_config();
  auto f = compute_rope_frequencies(c, 0);
  ASSERT_EQ(f.inv_freq.size(), 8u);
  for (int64_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(f.inv_freq[static_cast<size_t>(i)], plain(i, 16));
  EXPECT_EQ(f.attention_factor, 1.0);
  c.scaling.type = RopeScalingType::kLinear;
  c.scaling.factor = 4.0;
  f = compute_rope_frequencies(c, 0);
  for (int64_t i = 0; i < 8; ++i) EXPECT_NEAR(f.inv_freq[static_cast<size_t>(i)], plain(i, 16) / 4.0, 1e-15);
}

TEST(RopeScaling, DynamicNtkRescalesTheBaseOnlyPastTheContext) {
  RopeConfig c = base_config();
  c.scaling.type = RopeScalingType::kDynamicNtk;
  c.scaling.factor = 2.0;
  auto short_seq = compute_rope_frequencies(c, 100);
  for (int64_t i = 0; i < 8; ++i) EXPECT_NEAR(short_seq.inv_freq[static_cast<size_t>(i)], plain(i, 16), 1e-15);
  // seq_len 512 = 2 x 256: base' = base * (2 * 512/256 - 1)^(16/14) = base * 3^(8/7).
  auto long_seq = compute_rope_frequencies(c, 512);
  const double theta = 10000.0 * std::pow(3.0, 16.0 / 14.0);
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_NEAR(long_seq.inv_freq[static_cast<size_t>(i)], plain(i, 16, theta), 1e-14);
}

TEST(RopeScaling, YarnWorkedExample) {
  // dim 16, theta 1e4, original context 64, factor 4, beta 32/1: the correction range is
  // floor(16 ln(64/(64 pi)) / (2 ln 1e4)) -> clamp 0 .. ceil(16 ln(64/(2 pi)) / (2 ln 1e4)) = 3,
  // so pair i mixes interpolation (inv/4) and extrapolation (inv) with ramp min(i/3, 1).
  RopeConfig c = base_config();
  c.scaling.type = RopeScalingType::kYarn;
  c.scaling.factor = 4.0;
  c.scaling.original_max_position_embeddings = 64;
  auto f = compute_rope_frequencies(c, 0);
  for (int64_t i = 0; i < 8; ++i) {
    const double ramp = std::min(static_cast<double>(i) / 3.0, 1.0);
    EXPECT_NEAR(f.inv_freq[static_cast<size_t>(i)], plain(i, 16) / 4.0 * ramp + plain(i, 16) * (1 - ramp), 1e-15);
  }
  EXPECT_NEAR(f.attention_factor, 0.1 * std::log(4.0) + 1.0, 1e-15);
  c.scaling.attention_factor = 0.5;
  EXPECT_EQ(compute_rope_frequencies(c, 0).attention_factor, 0.5);
}

TEST(RopeScaling, Llama3FormulaEqualsGgufFrequencyDivisors) {
  // convert_hf_to_gguf.py's rope_freqs: divisor 1 for wavelen < old/high, factor for wavelen >
  // old/low, 1 / ((1 - s)/factor + s) in between with s = (old/wavelen - low)/(high - low).
  RopeConfig c = base_config();
  c.scaling.type = RopeScalingType::kLlama3;
  c.scaling.factor = 8.0;
  c.scaling.low_freq_factor = 1.0;
  c.scaling.high_freq_factor = 4.0;
  c.scaling.original_max_position_embeddings = 64;
  const auto formula = compute_rope_frequencies(c, 0);
  RopeConfig with_divisors = c;
  int regions[3] = {0, 0, 0};
  for (int64_t i = 0; i < 8; ++i) {
    const double wavelen = 2 * std::numbers::pi / plain(i, 16);
    double divisor;
    if (wavelen < 64.0 / 4.0) {
      divisor = 1.0;
      ++regions[0];
    } else if (wavelen > 64.0 / 1.0) {
      divisor = 8.0;
      ++regions[2];
    } else {
      const double s = (64.0 / wavelen - 1.0) / (4.0 - 1.0);
      divisor = 1.0 / ((1 - s) / 8.0 + s);
      ++regions[1];
    }
    with_divisors.scaling.freq_divisors.push_back(static_cast<float>(divisor));
  }
  EXPECT_GT(regions[0], 0);
  EXPECT_GT(regions[1], 0);
  EXPECT_GT(regions[2], 0);
  const auto divided = compute_rope_frequencies(with_divisors, 0);
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(formula.inv_freq[i], divided.inv_freq[i], 1e-7 * formula.inv_freq[i]);
}

TEST(RopeScaling, ParsesNames) {
  EXPECT_EQ(parse_rope_scaling_type("yarn"), RopeScalingType::kYarn);
  EXPECT_EQ(parse_rope_scaling_type("dynamic"), RopeScalingType::kDynamicNtk);
  EXPECT_EQ(parse_rope_scaling_type("default"), RopeScalingType::kNone);
  EXPECT_FALSE(parse_rope_scaling_type("longrope"));
}

TEST(Rope, LayoutsPairDifferentDimensions) {
  RopeFrequencies f;
  f.inv_freq = {1.0, 0.0};  // pair 0 rotates by the position in radians, pair 1 does not
  const std::vector<int64_t> pos = {1};
  // half-split: dims (0, 2) rotate, (1, 3) do not.
  std::vector<float> x = {1, 5, 0, 7};
  layers::apply_rope(x, 1, 1, 4, pos, f, RopeLayout::kHalfSplit);
  EXPECT_NEAR(x[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(x[2], std::sin(1.0), 1e-6);
  EXPECT_FLOAT_EQ(x[1], 5);
  EXPECT_FLOAT_EQ(x[3], 7);
  // interleaved: dims (0, 1) rotate, (2, 3) do not.
  std::vector<float> y = {1, 0, 5, 7};
  layers::apply_rope(y, 1, 1, 4, pos, f, RopeLayout::kInterleaved);
  EXPECT_NEAR(y[0], std::cos(1.0), 1e-6);
  EXPECT_NEAR(y[1], std::sin(1.0), 1e-6);
  EXPECT_FLOAT_EQ(y[2], 5);
  EXPECT_FLOAT_EQ(y[3], 7);
}

}  // namespace
}  // namespace lemma
