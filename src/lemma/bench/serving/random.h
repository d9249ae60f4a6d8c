// A small seeded random source for workloads and arrivals whose output is the same on every
// standard library (std::mt19937_64 is fully specified; the distributions here are our own).
// Not thread-safe: one per generator.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace lemma::bench::serving {

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi] (inclusive; hi >= lo).
  int64_t uniform_int(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine_() % static_cast<uint64_t>(hi - lo + 1));
  }
  // Exponentially distributed with the given rate (> 0): the gap of a Poisson process.
  double exponential(double rate) { return -std::log1p(-uniform()) / rate; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace lemma::bench::serving
