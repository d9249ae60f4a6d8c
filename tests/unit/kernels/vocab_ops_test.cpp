// The vocabulary passes of every ISA on this machine against their scalar references, on odd
// sizes (vector tails, exp_block_sums' partial last block) with NaN, -inf and ties in the rows.
#include "lemma/kernels/vocab_ops.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/reference/vocab_ops_reference.h"

namespace lemma::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
const int64_t kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1023, 1024, 1025, 2049, 3001, 151936};

// Logits in [-8, 8) rounded to 1/64 (so ties occur), with NaN and -inf sprinkled in when asked.
std::vector<float> logit_row(int64_t n, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> steps(-512, 511);
  std::uniform_int_distribution<int> pick(0, 29);
  std::vector<float> row(static_cast<size_t>(n));
  for (float& v : row) {
    v = static_cast<float>(steps(rng)) / 64.0f;
    const int p = pick(rng);
    if (specials && p == 0) v = kNan;
    if (specials && p == 1) v = -kInf;
  }
  return row;
}

std::string where(Isa isa, int64_t n) { return std::string(isa_name(isa)) + " n=" + std::to_string(n); }

TEST(VocabOps, CopyMaskingNanMaxAndArgmaxEqualTheReferenceOnEveryIsa) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      for (bool specials : {false, true}) {
        const std::vector<float> x = logit_row(n, static_cast<uint32_t>(n) + 7, specials);
        std::vector<float> got(x.size() + 1, 123.0f), want(x.size() + 1, 123.0f);
        EXPECT_EQ(copy_masking_nan(x, std::span(got).first(x.size()), isa),
                  copy_masking_nan_reference(x.data(), want.data(), n))
            << where(isa, n);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << where(isa, n) << " i=" << i;
        EXPECT_EQ(max_ignoring_nan(x, isa), max_ignoring_nan_reference(x.data(), n)) << where(isa, n);
        EXPECT_EQ(argmax_first(x, isa), argmax_first_reference(x.data(), n)) << where(isa, n);
      }
    }
  }
}

TEST(VocabOps, MaxAndArgmaxSeeTheLastEntryAndNothingFinite) {
  for (Isa isa : available_isas()) {
    for (int64_t n : {1, 17, 40, 1025}) {
      std::vector<float> x(static_cast<size_t>(n), -kInf);
      EXPECT_EQ(max_ignoring_nan(x, isa), -kInf) << where(isa, n);
      EXPECT_EQ(argmax_first(x, isa), -1) << where(isa, n);
      x.back() = kNan;
      EXPECT_EQ(argmax_first(x, isa), -1) << where(isa, n);
      x.front() = -3.0f;
      x.back() = 2.5f;  // the tail lane
      EXPECT_EQ(max_ignoring_nan(x, isa), 2.5f) << where(isa, n);
      EXPECT_EQ(argmax_first(x, isa), n - 1) << where(isa, n);
    }
  }
}

TEST(VocabOps, DivideRowIsATrueDivisionOnEveryIsa) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = logit_row(n, 99, true);
      for (float divisor : {0.7f, 1.0f, 3.0f}) {
        std::vector<float> got(x.size());
        divide_row(x, divisor, got, isa);
        for (size_t i = 0; i < x.size(); ++i) {
          const float want = x[i] / divisor;
          ASSERT_TRUE(std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want) || (std::isnan(want) && std::isnan(got[i])))
              << where(isa, n) << " i=" << i;
        }
      }
    }
  }
}

TEST(VocabOps, ExpBlockSumsGiveExpWeightsAndSumThemInTheFixedOrder) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      // Weights over e^-80 .. 1: wider than a double's mantissa, so the order of the sums shows.
      std::vector<float> x = logit_row(n, static_cast<uint32_t>(n) * 3 + 1, false);
      for (float& v : x) v *= 5.0f;
      for (size_t i = 5; i < x.size(); i += 11) x[i] = -kInf;  // masked tokens weigh 0
      const float shift = 40.0f;
      std::vector<float> w(x.size() + 1, 123.0f);
      std::vector<double> sums(static_cast<size_t>(exp_sum_blocks(n)) + 1, 123.0);
      const double total = exp_block_sums(x, shift, std::span(w).first(x.size()), sums, isa);
      EXPECT_EQ(w.back(), 123.0f) << "wrote past n: " << where(isa, n);
      EXPECT_EQ(sums.back(), 123.0) << "wrote past the blocks: " << where(isa, n);
      for (size_t i = 0; i < x.size(); ++i) {
        const double want = std::exp(static_cast<double>(x[i]) - shift);
        ASSERT_LE(std::fabs(w[i] - want), 4e-7 * want) << where(isa, n) << " i=" << i << " x=" << x[i];
      }
      // The sums are exact functions of the weights: the reference order over these weights.
      std::vector<double> want_sums(sums.size(), 123.0);
      EXPECT_EQ(total, block_sums_of_weights(w.data(), want_sums.data(), n)) << where(isa, n);
      for (size_t b = 0; b < sums.size(); ++b) EXPECT_EQ(sums[b], want_sums[b]) << where(isa, n) << " block " << b;
    }
  }
}

TEST(VocabOps, FirstAboveFindsTheReferenceIndexFromEveryStart) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = logit_row(n, static_cast<uint32_t>(n) + 55, true);
      for (float threshold : {-kInf, 0.0f, 7.5f, 7.984375f}) {
        for (int64_t start : {int64_t{0}, n / 3, n - 1}) {
          if (start < 0) continue;
          const std::span<const float> tail = std::span(x).subspan(static_cast<size_t>(start));
          EXPECT_EQ(first_above(tail, threshold, isa),
                    first_above_reference(tail.data(), threshold, static_cast<int64_t>(tail.size())))
              << where(isa, n) << " start " << start << " threshold " << threshold;
        }
      }
    }
  }
}

TEST(VocabOps, SelectAtLeastListsTheSameIdsAsTheReference) {
  for (Isa isa : available_isas()) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = logit_row(n, static_cast<uint32_t>(n) + 1234, true);
      for (float threshold : {-kInf, -8.0f, 0.0f, 3.0f + 1.0f / 64.0f, 7.984375f, kInf}) {
        std::vector<int32_t> got(x.size() + 1, -5), want(x.size() + 1, -5);
        const int64_t count = select_at_least(x, threshold, std::span(got).first(x.size()), isa);
        ASSERT_EQ(count, select_at_least_reference(x.data(), threshold, want.data(), n)) << where(isa, n);
        for (int64_t i = 0; i < count; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)]) << where(isa, n);
        EXPECT_EQ(got.back(), -5) << where(isa, n);
      }
    }
  }
}

}  // namespace
}  // namespace lemma::kernels
