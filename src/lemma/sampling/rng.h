// Rng: a small seeded PRNG (xoshiro256**, state filled by splitmix64) whose draws are identical on
// every platform and standard library, so a request's seed reproduces its samples anywhere.
// Not thread-safe: one Rng per request (sampler); copying it forks the stream.
#pragma once

#include <cstdint>

namespace lemma {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& word : state_) word = splitmix64(x);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double next_double() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  uint64_t state_[4];
};

}  // namespace lemma
