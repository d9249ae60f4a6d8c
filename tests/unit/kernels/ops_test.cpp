#include "lemma/kernels/ops.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lemma::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> random_row(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// |got - want| <= ulps * spacing of want (relative, with an absolute floor for tiny values).
void expect_close(float got, double want, double rel, double abs, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what;
  } else if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what;
  } else {
    EXPECT_LE(std::fabs(got - want), rel * std::fabs(want) + abs) << what << " got " << got << " want " << want;
  }
}

const int64_t kSizes[] = {0, 1, 7, 8, 15, 16, 17, 33, 255, 1000};

TEST(Ops, RmsnormEveryIsaMatchesDefinition) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      const auto x = random_row(static_cast<size_t>(n), 3.0f, 1), w = random_row(static_cast<size_t>(n), 2.0f, 2);
      std::vector<float> y(static_cast<size_t>(n) + 1, 99.0f);
      rmsnorm(x, w, 1e-5f, std::span<float>(y.data(), static_cast<size_t>(n)), isa);
      EXPECT_EQ(y.back(), 99.0f);  // nothing written past n
      double sum = 0.0;
      for (float v : x) sum += static_cast<double>(v) * v;
      const double r = 1.0 / std::sqrt((n ? sum / static_cast<double>(n) : 0.0) + 1e-5);
      for (size_t i = 0; i < x.size(); ++i) {
        expect_close(y[i], x[i] * r * w[i], 4e-7, 1e-30, std::string(isa_name(isa)) + " n=" + std::to_string(n));
      }
    }
  }
}

TEST(Ops, RmsnormInPlaceAndZeros) {
  for (Isa isa : available_isas()) {
    auto x = random_row(33, 1.0f, 3);
    const auto w = random_row(33, 1.0f, 4);
    std::vector<float> y(33);
    rmsnorm(x, w, 1e-6f, y, isa);
    rmsnorm(x, w, 1e-6f, x, isa);
    EXPECT_EQ(x, y) << isa_name(isa);
    const std::vector<float> zeros(9, 0.0f);
    rmsnorm(zeros, std::vector<float>(9, 3.0f), 1e-6f, std::span<float>(y.data(), 9), isa);
    for (int i = 0; i < 9; ++i) EXPECT_EQ(y[i], 0.0f) << isa_name(isa);
  }
}

// The fused residual add + RMSNorm must be the unfused pair's bits on each ISA (the forward's
// results do not change with fusion), with y aliasing delta as the forward uses it.
TEST(Ops, AddRmsnormIsAddThenRmsnormBitwise) {
  for (Isa isa : available_isas()) {
    for (int64_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 255, 897, 1000}) {
      const auto size = static_cast<size_t>(n);
      const auto residual = random_row(size, 4.0f, 11), delta = random_row(size, 1.0f, 12), w = random_row(size, 2.0f, 13);
      std::vector<float> want_residual(size), want_y(size);
      add(residual, delta, want_residual, isa);
      rmsnorm(want_residual, w, 1e-6f, want_y, isa);

      std::vector<float> got_residual = residual, got_y(size + 1, 99.0f);
      add_rmsnorm(got_residual, delta, w, 1e-6f, std::span<float>(got_y.data(), size), isa);
      EXPECT_EQ(got_y.back(), 99.0f) << isa_name(isa) << " n=" << n;  // nothing written past n
      got_y.pop_back();
      EXPECT_EQ(0, std::memcmp(got_residual.data(), want_residual.data(), size * 4)) << isa_name(isa) << " n=" << n;
      EXPECT_EQ(0, std::memcmp(got_y.data(), want_y.data(), size * 4)) << isa_name(isa) << " n=" << n;

      std::vector<float> aliased_residual = residual, aliased = delta;  // y over delta
      add_rmsnorm(aliased_residual, aliased, w, 1e-6f, aliased, isa);
      EXPECT_EQ(0, std::memcmp(aliased.data(), want_y.data(), size * 4)) << isa_name(isa) << " n=" << n;
      EXPECT_EQ(0, std::memcmp(aliased_residual.data(), want_residual.data(), size * 4)) << isa_name(isa) << " n=" << n;
    }
  }
}

TEST(Ops, AddRmsnormEveryIsaMatchesReference) {
  for (Isa isa : available_isas()) {
    for (int64_t n : {1, 5, 13, 17, 63, 65, 129, 897}) {
      const auto size = static_cast<size_t>(n);
      const auto delta = random_row(size, 2.0f, 21), w = random_row(size, 1.5f, 22);
      std::vector<float> ref_residual = random_row(size, 3.0f, 23), got_residual = ref_residual;
      std::vector<float> ref_y(size), got_y(size);
      add_rmsnorm(ref_residual, delta, w, 1e-5f, ref_y, Isa::kScalar);
      add_rmsnorm(got_residual, delta, w, 1e-5f, got_y, isa);
      EXPECT_EQ(got_residual, ref_residual) << isa_name(isa) << " n=" << n;  // one rounding either way
      for (size_t i = 0; i < size; ++i)
        expect_close(got_y[i], ref_y[i], 4e-7, 1e-30, std::string(isa_name(isa)) + " n=" + std::to_string(n));
    }
  }
}

TEST(Ops, ExpEveryIsaWithinTwoUlp) {
  std::vector<float> x;
  for (float v = -110.0f; v < 95.0f; v += 0.0137f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, 88.7228f, 88.73f, -87.33f, -87.34f, 100.0f, -200.0f}) x.push_back(v);
  for (Isa isa : available_isas()) {
    std::vector<float> y(x.size());
    exp_row(x, y, isa);
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      if (want < std::numeric_limits<float>::min()) {  // subnormal range: flushing to 0 is allowed
        EXPECT_LE(y[i], std::numeric_limits<float>::min()) << isa_name(isa) << " x=" << x[i];
        EXPECT_GE(y[i], 0.0f);
        continue;
      }
      if (want > std::numeric_limits<float>::max()) {
        EXPECT_EQ(y[i], kInf) << isa_name(isa) << " x=" << x[i];
        continue;
      }
      expect_close(y[i], want, 2.5 * 0x1p-23, 0.0, std::string(isa_name(isa)) + " x=" + std::to_string(x[i]));
    }
    const std::vector<float> special = {-kInf, kInf, NAN};
    std::vector<float> out(3);
    exp_row(special, out, isa);
    EXPECT_EQ(out[0], 0.0f) << isa_name(isa);
    EXPECT_EQ(out[1], kInf) << isa_name(isa);
    EXPECT_TRUE(std::isnan(out[2])) << isa_name(isa);
  }
}

TEST(Ops, SiluMulEveryIsa) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      const auto g = random_row(static_cast<size_t>(n), 12.0f, 5), u = random_row(static_cast<size_t>(n), 2.0f, 6);
      std::vector<float> out(static_cast<size_t>(n));
      silu_mul(g, u, out, isa);
      for (size_t i = 0; i < g.size(); ++i) {
        const double want = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
        expect_close(out[i], want, 1e-6, 1e-37, std::string(isa_name(isa)) + " g=" + std::to_string(g[i]));
      }
    }
    const std::vector<float> g = {0.0f, 20.0f, -100.0f, 1.0f}, u = {2.0f, 1.0f, 5.0f, 2.0f};
    std::vector<float> out(4);
    silu_mul(g, u, out, isa);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_NEAR(out[1], 20.0, 1e-5);
    EXPECT_NEAR(out[2], 0.0, 1e-30);
    EXPECT_FALSE(std::isnan(out[2])) << isa_name(isa);
  }
}

TEST(Ops, SoftmaxEveryIsaStableAndNormalised) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      auto x = random_row(static_cast<size_t>(n), 20.0f, 7);
      for (auto& v : x) v += 1000.0f;  // large offsets must not overflow
      if (n > 3) x[2] = -kInf;
      std::vector<float> y(static_cast<size_t>(n));
      softmax(x, y, isa);
      double max = -INFINITY, sum = 0.0;
      for (float v : x) max = std::max(max, static_cast<double>(v));
      for (float v : x) sum += std::exp(static_cast<double>(v) - max);
      double total = 0.0;
      for (size_t i = 0; i < x.size(); ++i) {
        expect_close(y[i], std::exp(static_cast<double>(x[i]) - max) / sum, 1e-6, 1e-37,
                     std::string(isa_name(isa)) + " n=" + std::to_string(n));
        total += y[i];
      }
      if (n > 0) {
        EXPECT_NEAR(total, 1.0, 1e-5) << isa_name(isa);
      }
      if (n > 3) {
        EXPECT_EQ(y[2], 0.0f) << isa_name(isa);
      }
    }
  }
}

TEST(Ops, SoftmaxEdgeCasesEveryIsa) {
  for (Isa isa : available_isas()) {
    std::vector<float> y(19, 7.0f);
    softmax(std::vector<float>(19, -kInf), y, isa);
    for (float v : y) EXPECT_EQ(v, 0.0f) << isa_name(isa);
    std::vector<float> x(19, 1.0f);
    x[17] = NAN;
    softmax(x, y, isa);
    for (float v : y) EXPECT_TRUE(std::isnan(v)) << isa_name(isa);
    std::vector<float> one_hot(19, -kInf);
    one_hot[11] = 3.0f;
    softmax(one_hot, y, isa);
    EXPECT_EQ(y[11], 1.0f) << isa_name(isa);
    EXPECT_EQ(y[10], 0.0f) << isa_name(isa);
  }
}

TEST(Ops, AddEveryIsaIsExact) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      const auto a = random_row(static_cast<size_t>(n), 5.0f, 8), b = random_row(static_cast<size_t>(n), 5.0f, 9);
      std::vector<float> out(static_cast<size_t>(n) + 1, 42.0f);
      add(a, b, std::span<float>(out.data(), static_cast<size_t>(n)), isa);
      for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(out[i], a[i] + b[i]) << isa_name(isa);
      EXPECT_EQ(out.back(), 42.0f);
    }
  }
}

TEST(Ops, DefaultOverloadsUseActiveIsa) {
  const auto x = random_row(40, 4.0f, 10);
  std::vector<float> a(40), b(40);
  softmax(x, a);
  softmax(x, b, detected_isa());
  EXPECT_EQ(a, b);
  exp_row(x, a);
  exp_row(x, b, detected_isa());
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace lemma::kernels
