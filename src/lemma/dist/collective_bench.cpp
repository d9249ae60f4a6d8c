#include "lemma/dist/collective_bench.h"

#include <algorithm>
#include <chrono>

namespace lemma::dist {

const char* bench_op_name(BenchOp op) {
  switch (op) {
    case BenchOp::kAllReduce: return "all_reduce";
    case BenchOp::kAllGather: return "all_gather";
    case BenchOp::kBroadcast: return "broadcast";
  }
  return "?";
}

namespace {
using Clock = std::chrono::steady_clock;

// Bytes a link carries per byte of result: all-reduce moves 2(n-1)/n, all-gather and broadcast (n-1)/n.
double bus_factor(BenchOp op, int n) {
  const double ratio = static_cast<double>(n - 1) / static_cast<double>(n);
  return op == BenchOp::kAllReduce ? 2.0 * ratio : ratio;
}

void run_once(Communicator& comm, BenchOp op, std::vector<float>& data, std::vector<float>& gathered) {
  switch (op) {
    case BenchOp::kAllReduce: comm.all_reduce(data); break;
    case BenchOp::kAllGather: comm.all_gather(data, gathered); break;
    case BenchOp::kBroadcast: comm.broadcast(std::as_writable_bytes(std::span<float>(data)), 0); break;
  }
}
}  // namespace

std::vector<CollectiveTiming> time_collectives(Communicator& comm, const CollectiveBenchOptions& options) {
  std::vector<CollectiveTiming> results;
  for (BenchOp op : options.ops) {
    for (std::size_t requested : options.bytes) {
      const std::size_t floats = std::max<std::size_t>(1, requested / sizeof(float));
      const std::size_t bytes = floats * sizeof(float);
      // Every rank computes the same count from the same arguments: no message needed to agree.
      const int iterations = static_cast<int>(std::clamp<std::size_t>(
          options.bytes_per_size / bytes, static_cast<std::size_t>(options.min_iterations),
          static_cast<std::size_t>(options.max_iterations)));
      // Small values: repeated sums stay finite.
      std::vector<float> data(floats, 1e-3f), gathered(floats * static_cast<std::size_t>(comm.size()));
      for (int i = 0; i < options.warmup; ++i) run_once(comm, op, data, gathered);
      std::vector<double> each_us;
      each_us.reserve(static_cast<std::size_t>(iterations));
      comm.barrier();
      const auto start = Clock::now();
      for (int i = 0; i < iterations; ++i) {
        const auto t0 = Clock::now();
        run_once(comm, op, data, gathered);
        each_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      const double total_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      std::nth_element(each_us.begin(), each_us.begin() + static_cast<std::ptrdiff_t>(each_us.size() / 2), each_us.end());
      // The slowest rank decides what a caller waits for.
      std::vector<float> worst = {static_cast<float>(total_us / iterations), static_cast<float>(each_us[each_us.size() / 2])};
      comm.all_reduce(worst, ReduceOp::kMax);
      CollectiveTiming t;
      t.op = op;
      t.bytes = bytes;
      t.iterations = iterations;
      t.avg_us = worst[0];
      t.p50_us = worst[1];
      t.algbw_gbps = static_cast<double>(bytes) / (t.avg_us * 1e3);
      t.busbw_gbps = t.algbw_gbps * bus_factor(op, comm.size());
      results.push_back(t);
    }
  }
  return results;
}

}  // namespace lemma::dist
