#include "lemma/sampling/logit_ops.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace lemma {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(LogitOps, ArgmaxLowestIdOnTiesAndIgnoresNan) {
  EXPECT_EQ(argmax(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(argmax(std::vector<float>{NAN, 0.5f, NAN, 0.5f}), 1);
  EXPECT_EQ(argmax(std::vector<float>{-kInf, -kInf, -7.0f}), 2);
  EXPECT_EQ(argmax(std::vector<float>{-kInf, NAN}), kNoToken);
  EXPECT_EQ(argmax(std::vector<float>{}), kNoToken);
}

TEST(LogitOps, MaskNan) {
  std::vector<float> v = {NAN, 1.0f, NAN};
  EXPECT_EQ(mask_nan(v), 2);
  EXPECT_EQ(v[0], -kInf);
  EXPECT_EQ(v[1], 1.0f);
  // Past the vector width, with NaN in the tail too; the source is left as it was.
  std::vector<float> src(37, 0.25f), out(37, 9.0f);
  src[0] = src[16] = src[36] = NAN;
  src[5] = -kInf;
  EXPECT_EQ(copy_masking_nan(src, out), 3);
  for (size_t i = 0; i < src.size(); ++i) EXPECT_EQ(out[i], std::isnan(src[i]) ? -kInf : src[i]) << i;
  EXPECT_TRUE(std::isnan(src[36]));
}

TEST(LogitOps, ArgmaxFindsTheFirstBestPastTheVectorWidth) {
  std::vector<float> v(1000, -1.0f);
  v[999] = 5.0f;
  EXPECT_EQ(argmax(v), 999);
  v[17] = 5.0f;
  v[3] = NAN;
  EXPECT_EQ(argmax(v), 17);
}

TEST(LogitOps, TemperatureAndBias) {
  std::vector<float> v = {2.0f, -4.0f, 1.0f};
  apply_temperature(v, 0.5f);
  EXPECT_EQ(v, (std::vector<float>{4.0f, -8.0f, 2.0f}));
  const std::vector<std::pair<int32_t, float>> bias = {{2, 10.0f}, {0, -100.0f}, {7, 1.0f}, {-1, 1.0f}};
  apply_logit_bias(v, bias);
  EXPECT_EQ(v, (std::vector<float>{-96.0f, -8.0f, 12.0f}));
}

TEST(LogitOps, RepetitionPenaltyFollowsHf) {
  std::vector<float> v = {2.0f, -2.0f, 3.0f, 0.0f};
  std::vector<uint8_t> flags(4, 0);
  const std::vector<int32_t> prompt = {0, 1, 0, 99};  // repeats penalised once; 99 out of range
  const std::vector<int32_t> output = {0, 3, 1};        // in both lists: still once
  apply_repetition_penalty(v, prompt, output, 2.0f, flags);
  EXPECT_EQ(v, (std::vector<float>{1.0f, -4.0f, 3.0f, 0.0f}));
  for (uint8_t f : flags) EXPECT_EQ(f, 0);  // scratch left clean
}

TEST(LogitOps, PresenceAndFrequencyFollowOpenAi) {
  std::vector<float> v = {1.0f, 1.0f, 1.0f};
  std::vector<int32_t> counts(3, 0);
  const std::vector<int32_t> out = {0, 0, 0, 2};
  apply_presence_frequency(v, out, 0.5f, 0.25f, counts);
  EXPECT_FLOAT_EQ(v[0], 1.0f - 0.5f - 0.75f);
  EXPECT_FLOAT_EQ(v[1], 1.0f);
  EXPECT_FLOAT_EQ(v[2], 1.0f - 0.5f - 0.25f);
  for (int32_t c : counts) EXPECT_EQ(c, 0);
}

TEST(LogitOps, SoftmaxStableAndLogSoftmaxConsistent) {
  const std::vector<float> v = {1000.0f, 1000.0f + std::log(3.0f), -kInf, NAN};
  std::vector<float> p(4), lp(4);
  softmax(v, p);
  log_softmax(v, lp);
  const double d = static_cast<double>(v[1]) - v[0];  // exact; log(3) rounded near 1000
  EXPECT_NEAR(p[0], 1.0 / (1.0 + std::exp(d)), 1e-7);
  EXPECT_NEAR(p[1], 1.0 / (1.0 + std::exp(-d)), 1e-7);
  EXPECT_NEAR(p[1], 0.75, 1e-4);
  EXPECT_EQ(p[2], 0.0f);
  EXPECT_EQ(p[3], 0.0f);
  EXPECT_NEAR(lp[0], -std::log1p(std::exp(d)), 1e-6);
  EXPECT_EQ(lp[2], -kInf);
  std::vector<float> all_masked = {-kInf, -kInf};
  softmax(all_masked, p);
  EXPECT_EQ(p[0], 0.0f);
  log_softmax(all_masked, lp);
  EXPECT_EQ(lp[1], -kInf);
}

TEST(LogitOps, TopLogprobsSortedWithIdTieBreak) {
  const std::vector<float> v = {0.0f, 2.0f, 1.0f, 2.0f, NAN};
  std::vector<TokenLogprob> out(3);
  std::vector<int32_t> scratch(v.size());
  ASSERT_EQ(top_logprobs(v, out, scratch), 3);
  EXPECT_EQ(out[0].token, 1);
  EXPECT_EQ(out[1].token, 3);
  EXPECT_EQ(out[2].token, 2);
  EXPECT_EQ(out[0].logprob, out[1].logprob);
  const double log_sum = std::log(1.0 + 2.0 * std::exp(2.0) + std::exp(1.0));
  EXPECT_NEAR(out[2].logprob, 1.0 - log_sum, 1e-6);
  std::vector<TokenLogprob> many(10);
  EXPECT_EQ(top_logprobs(v, many, scratch), 5);
  EXPECT_EQ(many[4].token, 4);  // NaN last
  EXPECT_EQ(many[4].logprob, -kInf);
}

}  // namespace
}  // namespace lemma
