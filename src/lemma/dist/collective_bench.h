// Latency and bandwidth of one communicator's collectives by message size (what `lemma bench
// collectives` prints for the shared-memory and the MPI backends side by side). Collective: every
// rank of the group calls it with the same arguments and gets the same results.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lemma/dist/communicator.h"

namespace lemma::dist {

enum class BenchOp { kAllReduce, kAllGather, kBroadcast };
const char* bench_op_name(BenchOp op);

struct CollectiveTiming {
  BenchOp op = BenchOp::kAllReduce;
  std::size_t bytes = 0;        // per rank: the vector reduced, each rank's part gathered, the broadcast
  int iterations = 0;
  double avg_us = 0.0;          // mean time per call on the slowest rank
  double p50_us = 0.0;          // median of one call's time on the slowest rank's medians
  double algbw_gbps = 0.0;      // bytes / avg time
  double busbw_gbps = 0.0;      // algbw scaled to the bytes each link carries (nccl-tests' convention)
};

struct CollectiveBenchOptions {
  std::vector<std::size_t> bytes = {};  // sizes to time; each rounded down to whole floats (at least one)
  std::vector<BenchOp> ops = {BenchOp::kAllReduce, BenchOp::kAllGather, BenchOp::kBroadcast};
  std::size_t bytes_per_size = std::size_t{256} << 20;  // iterations = this / bytes, within [min, max]
  int min_iterations = 10;
  int max_iterations = 2000;
  int warmup = 3;
};

std::vector<CollectiveTiming> time_collectives(Communicator& comm, const CollectiveBenchOptions& options);

}  // namespace lemma::dist
