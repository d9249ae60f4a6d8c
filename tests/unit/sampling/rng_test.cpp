#include "lemma/sampling/rng.h"

#include <set>

#include <gtest/gtest.h>

namespace lemma {
namespace {

TEST(Rng, SameSeedSameStream) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs |= x != c.next_u64();
  }
  EXPECT_TRUE(differs);
}

// Pins the stream: the algorithm (splitmix64 seeding + xoshiro256**) must not change silently,
// or every stored seed would reproduce different samples.
TEST(Rng, StreamIsPinned) {
  Rng rng(0);
  uint64_t first = rng.next_u64();
  Rng again(0);
  EXPECT_EQ(first, again.next_u64());
  // xoshiro256** of splitmix64(0)'s state; computed by this implementation and checked against
  // the published algorithm's structure (rotl(s1 * 5, 7) * 9).
  uint64_t x = 0;
  uint64_t s[4];
  for (auto& w : s) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    w = z ^ (z >> 31);
  }
  const uint64_t m = s[1] * 5;
  EXPECT_EQ(first, ((m << 7) | (m >> 57)) * 9);
  EXPECT_EQ(s[0], 0xE220A8397B1DCDAFull);  // splitmix64's first output for seed 0
}

TEST(Rng, DoublesAreUniformInUnitInterval) {
  Rng rng(7);
  int buckets[10] = {};
  double sum = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.next_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    ++buckets[static_cast<int>(u * 10)];
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  double chi2 = 0.0;
  for (int b : buckets) chi2 += (b - n / 10.0) * (b - n / 10.0) / (n / 10.0);
  EXPECT_LT(chi2, 27.9);  // df 9, p = 0.001
}

}  // namespace
}  // namespace lemma
