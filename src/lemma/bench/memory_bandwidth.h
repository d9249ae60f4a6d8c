// Memory read bandwidth measured as issue 5 defines it for every roofline figure: the best of
// `passes` read-only passes over a `bytes` buffer (1 GiB by default) split evenly over
// `num_threads` pinned threads, each summing its slice with vector loads (AVX2 where the CPU has
// it) so the reads cannot be optimised away. Allocates and first-touches the buffer per call.
#pragma once

#include <cstdint>
#include <vector>

namespace lemma::bench {

inline constexpr uint64_t kBandwidthBufferBytes = uint64_t{1} << 30;

struct BandwidthOptions {
  int num_threads = 1;
  uint64_t bytes = kBandwidthBufferBytes;  // rounded down to a multiple of 256 per thread
  int passes = 5;
};

struct BandwidthResult {
  double best_gbps = 0.0;           // 1 GB = 1e9 bytes
  std::vector<double> pass_gbps;    // every pass, in order
  uint64_t bytes_per_pass = 0;
  const char* loop = "";            // "avx2" or "scalar"
};

// Throws InvalidArgument for < 1 thread or pass, or a buffer smaller than 256 bytes per thread.
BandwidthResult measure_read_bandwidth(const BandwidthOptions& options);

}  // namespace lemma::bench
