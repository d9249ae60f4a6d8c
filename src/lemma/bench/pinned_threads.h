// Timed parallel passes on pinned threads, for machine probes (bandwidth, peak FLOP/s): each of
// `num_threads` threads is pinned to one allowed CPU (best effort: ignored where the OS refuses),
// runs `setup` once, then every pass starts on all threads at once and ends when the last finishes.
// Threads are created per call; not for use inside the model's forward.
#pragma once

#include <functional>
#include <vector>

namespace lemma::bench {

struct ParallelPasses {
  int num_threads = 1;
  int passes = 5;
  std::function<void(int thread)> setup;  // optional, e.g. first-touch of the thread's slice
  std::function<void(int thread)> body;   // one pass of one thread
};

// Seconds of each pass: from the earliest thread start to the latest thread end, each stamped by
// the thread itself around its body (so a pass is never shorter than any thread's work).
std::vector<double> run_parallel_passes(const ParallelPasses& job);

}  // namespace lemma::bench
