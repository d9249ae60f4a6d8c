// Deterministic test vectors for the collectives: every rank can compute every other rank's input,
// so each test checks against a serial reference without communicating. Magnitudes span 2^-10..2^10,
// so a sum taken in another order than rank order gives other bits and the tests notice.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace lemma::dist::testing {

inline float test_value(int rank, std::size_t i, std::uint64_t salt = 0) {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) << 40) ^ i ^ (salt << 52);
  x += 0x9e3779b97f4a7c15ULL;  // splitmix64
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  const float unit = static_cast<float>(x & 0xffffff) / static_cast<float>(0x1000000) * 2.0f - 1.0f;
  const int exponent = static_cast<int>((x >> 24) % 21) - 10;
  return std::ldexp(unit, exponent);
}

inline std::vector<float> test_vector(int rank, std::size_t n, std::uint64_t salt = 0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = test_value(rank, i, salt);
  return v;
}

// The serial reference: ranks[0]'s vector, then each next rank's added (or max'ed) in order.
inline std::vector<float> reference_reduce(const std::vector<int>& ranks, std::size_t n, bool max,
                                           std::uint64_t salt = 0) {
  std::vector<float> acc = test_vector(ranks.at(0), n, salt);
  for (std::size_t k = 1; k < ranks.size(); ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      const float x = test_value(ranks[k], i, salt);
      acc[i] = max ? (acc[i] < x ? x : acc[i]) : acc[i] + x;
    }
  }
  return acc;
}

}  // namespace lemma::dist::testing
