// The vocabulary passes sampling uses (vocab_passes.h) against plain references, on odd sizes
// around the vector width and the weight block, with NaN, -inf and ties.
#include "lemma/sampling/vocab_passes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace lemma {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const size_t kSizes[] = {1, 2, 15, 16, 17, 1023, 1024, 1025, 3000, 151936};

std::vector<float> random_logits(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(VocabPasses, MaxValueIgnoresNanAndIsMinusInfWhenNothingIsFinite) {
  for (size_t n : kSizes) {
    std::vector<float> v = random_logits(n, static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; i += 7) v[i] = std::numeric_limits<float>::quiet_NaN();
    float expected = -kInf;
    for (float x : v)
      if (!std::isnan(x)) expected = std::max(expected, x);
    EXPECT_EQ(max_value(v), expected) << "n = " << n;
    v.back() = 1e30f;  // the last entry, past every full vector of lanes
    EXPECT_EQ(max_value(v), 1e30f) << "n = " << n;
  }
  EXPECT_EQ(max_value(std::vector<float>(33, -kInf)), -kInf);
  EXPECT_EQ(max_value(std::vector<float>(33, std::numeric_limits<float>::quiet_NaN())), -kInf);
  EXPECT_EQ(max_value({}), -kInf);
}

TEST(VocabPasses, ExpWeightsAreExpOfTheShiftAndSumPerBlock) {
  for (size_t n : kSizes) {
    std::vector<float> v = random_logits(n, 100 + static_cast<uint32_t>(n));
    for (size_t i = 3; i < n; i += 11) v[i] = -kInf;
    const float max = max_value(v);
    std::vector<float> w(n);
    std::vector<double> blocks(weight_blocks(n));
    const double total = exp_weights(v, max, w, blocks);
    double reference_total = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double e = std::exp(static_cast<double>(v[i]) - max);
      reference_total += e;
      if (std::isinf(v[i])) {
        EXPECT_EQ(w[i], 0.0f);
      } else {
        // A few ulp of exp, plus the float rounding of v - max (half an ulp of x) that exp turns
        // into a relative error of |x| * 2^-24.
        const double x = std::abs(static_cast<double>(v[i]) - max);
        EXPECT_NEAR(w[i], e, e * (3e-7 + x * 6e-8) + 1e-37) << "n = " << n << ", i = " << i;
      }
    }
    EXPECT_NEAR(total, reference_total, 1e-5 * reference_total) << "n = " << n;
    double block_total = 0.0;
    for (size_t b = 0; b < blocks.size(); ++b) {
      double sum = 0.0;
      for (size_t i = b * kWeightBlock; i < std::min(n, (b + 1) * kWeightBlock); ++i) sum += w[i];
      EXPECT_NEAR(blocks[b], sum, 1e-5 * sum) << "block " << b;
      block_total += blocks[b];
    }
    EXPECT_DOUBLE_EQ(total, block_total);
  }
}

TEST(VocabPasses, MinPCutoffIsTheBoundaryOfTheDoubleTest) {
  std::mt19937 rng(77);
  std::normal_distribution<float> logit(0.0f, 20.0f);
  std::uniform_real_distribution<double> min_p(1e-6, 1.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const float max = trial == 0 ? 0.0f : logit(rng);
    const double log_min_p = trial == 1 ? 0.0 : std::log(min_p(rng));
    const float cutoff = min_p_cutoff(max, log_min_p);
    const auto keeps = [&](float l) { return static_cast<double>(l) - static_cast<double>(max) >= log_min_p; };
    ASSERT_TRUE(keeps(cutoff)) << "max " << max << " log_min_p " << log_min_p;
    ASSERT_FALSE(keeps(std::nextafter(cutoff, -kInf))) << "max " << max << " log_min_p " << log_min_p;
    ASSERT_LE(cutoff, max);
  }
}

TEST(VocabPasses, InverseCdfFindsTheEntryAtEachTargetAndNeverAZeroWeight) {
  std::mt19937 rng(5);
  for (size_t n : kSizes) {
    // Spread 3: the smallest weights (about e^-30 of the largest) still exceed the ~1e-16 relative
    // by which a block's lane-wise sum and the sequential scan may differ.
    std::vector<float> v = random_logits(n, 200 + static_cast<uint32_t>(n));
    for (size_t i = 1; i < n; i += 3) v[i] = -kInf;  // zero weights between the others
    std::vector<float> w(n);
    std::vector<double> blocks(weight_blocks(n));
    const double total = exp_weights(v, max_value(v), w, blocks);
    // Running sum before entry i as inverse_cdf defines it: the earlier blocks' sums, then the
    // entry's block in order (a sum over all 152K entries in order would round differently).
    std::vector<double> before(n, 0.0);
    double blocks_before = 0.0;
    for (size_t b = 0; b < blocks.size(); ++b) {
      double running = blocks_before;
      for (size_t i = b * kWeightBlock; i < std::min(n, (b + 1) * kWeightBlock); ++i) {
        before[i] = running;
        running += w[i];
      }
      blocks_before += blocks[b];
    }
    for (int trial = 0; trial < 200; ++trial) {
      const size_t i = rng() % n;
      if (w[i] == 0.0f) {
        EXPECT_NE(inverse_cdf(w, blocks, std::min(before[i], total * (1 - 1e-12))), i) << "a zero weight was chosen";
        continue;
      }
      EXPECT_EQ(inverse_cdf(w, blocks, before[i] + 0.5 * w[i]), i) << "n = " << n;  // the middle of entry i
    }
    size_t last = n - 1;
    while (w[last] == 0.0f) --last;
    EXPECT_EQ(inverse_cdf(w, blocks, total), last) << "a target at the very top gives the last positive weight";
    EXPECT_EQ(inverse_cdf(w, blocks, 0.0), 0u);
  }
}

TEST(VocabPasses, BestPositionsAreTheTopKOfAFullSortWithTiesToLowerPositions) {
  std::mt19937 rng(9);
  for (size_t n : {1, 5, 64, 65, 1000, 5000}) {
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(rng() % 13);  // many ties
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return v[static_cast<size_t>(a)] > v[static_cast<size_t>(b)]; });
    for (size_t k : {size_t{1}, size_t{2}, size_t{40}, n / 2, n}) {
      if (k == 0 || k > n) continue;
      std::vector<int32_t> out(n);
      best_positions(v, k, out);
      std::vector<int32_t> got(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k));
      std::vector<int32_t> want(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k));
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(got, want) << "n = " << n << ", k = " << k;
    }
  }
}

}  // namespace
}  // namespace lemma
