#include "lemma/kernels/ops.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace lemma::kernels {
namespace {

TEST(Ops, RmsnormMatchesDefinition) {
  const std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f}, w = {1.0f, 0.5f, 2.0f, -1.0f};
  std::vector<float> y(4);
  rmsnorm(x, w, 1e-5f, y);
  const double mean = (1.0 + 4.0 + 9.0 + 0.25) / 4.0;
  const double r = 1.0 / std::sqrt(mean + 1e-5);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(y[i], x[i] * r * w[i], 1e-6) << i;
  rmsnorm(x, w, 1e-5f, std::span<float>(const_cast<float*>(x.data()), 4));  // in place
  EXPECT_EQ(x, y);
}

TEST(Ops, RmsnormOfZerosIsZero) {
  const std::vector<float> x(5, 0.0f), w(5, 3.0f);
  std::vector<float> y(5, 1.0f);
  rmsnorm(x, w, 1e-6f, y);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(Ops, SiluMul) {
  const std::vector<float> g = {0.0f, 1.0f, -1.0f, 20.0f, -100.0f}, u = {2.0f, 2.0f, 3.0f, 1.0f, 5.0f};
  std::vector<float> out(5);
  silu_mul(g, u, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 2.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(out[2], -3.0 / (1.0 + std::exp(1.0)), 1e-6);
  EXPECT_NEAR(out[3], 20.0, 1e-5);
  EXPECT_NEAR(out[4], 0.0, 1e-30);
  EXPECT_FALSE(std::isnan(out[4]));
}

TEST(Ops, SoftmaxIsStableAndNormalised) {
  const std::vector<float> x = {1000.0f, 1001.0f, 999.0f, -std::numeric_limits<float>::infinity()};
  std::vector<float> y(4);
  softmax(x, y);
  const double e0 = std::exp(-1.0), e2 = std::exp(-2.0), sum = e0 + 1.0 + e2;
  EXPECT_NEAR(y[0], e0 / sum, 1e-6);
  EXPECT_NEAR(y[1], 1.0 / sum, 1e-6);
  EXPECT_NEAR(y[2], e2 / sum, 1e-6);
  EXPECT_EQ(y[3], 0.0f);
}

TEST(Ops, SoftmaxEdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> y(3, 7.0f);
  softmax(std::vector<float>{-inf, -inf, -inf}, y);
  for (float v : y) EXPECT_EQ(v, 0.0f);
  softmax(std::vector<float>{0.0f, NAN, 1.0f}, y);
  for (float v : y) EXPECT_TRUE(std::isnan(v));
  softmax(std::vector<float>{-inf, 3.0f, -inf}, y);
  EXPECT_EQ(y[1], 1.0f);
}

TEST(Ops, Add) {
  const std::vector<float> a = {1.0f, 2.0f}, b = {0.5f, -4.0f};
  std::vector<float> out(2);
  add(a, b, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
}

}  // namespace
}  // namespace lemma::kernels
