// The machine probes compute what they claim (sums of the bytes read) and report sane, positive
// figures; their speed is never asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <chrono>
#include <memory>
#include <thread>

#include "lemma/base/error.h"
#include "lemma/bench/memory_bandwidth.h"
#include "lemma/bench/peak_flops.h"
#include "lemma/bench/pinned_threads.h"
#include "lemma/bench/x86/probes.h"
#include "lemma/kernels/isa.h"

namespace lemma::bench {
namespace {

TEST(Probes, ReadSumsAddEveryWord) {
  constexpr size_t kWords = 4096;
  std::unique_ptr<uint64_t, decltype(&std::free)> data(
      static_cast<uint64_t*>(std::aligned_alloc(64, kWords * sizeof(uint64_t))), &std::free);
  uint64_t expected = 0;
  for (size_t i = 0; i < kWords; ++i) {
    data.get()[i] = i * 2654435761u + 7;
    expected += data.get()[i];
  }
  EXPECT_EQ(x86::read_sum_scalar(data.get(), kWords * sizeof(uint64_t)), expected);
  if (kernels::cpu_features().avx2) {
    EXPECT_EQ(x86::read_sum_avx2(data.get(), kWords * sizeof(uint64_t)), expected);
  }
}

TEST(Probes, ParallelPassesRunEveryThreadEveryPass) {
  std::atomic<int> calls{0}, setups{0};
  ParallelPasses job;
  job.num_threads = 3;
  job.passes = 4;
  job.setup = [&](int) { ++setups; };
  job.body = [&](int) { ++calls; };
  const auto seconds = run_parallel_passes(job);
  EXPECT_EQ(seconds.size(), 4u);
  EXPECT_EQ(setups.load(), 3);
  EXPECT_EQ(calls.load(), 12);
}

TEST(Probes, APassLastsAtLeastAsLongAsEachThreadsWork) {
  ParallelPasses job;
  job.num_threads = 2;
  job.passes = 3;
  job.body = [](int t) { std::this_thread::sleep_for(std::chrono::milliseconds(t == 0 ? 5 : 20)); };
  for (double s : run_parallel_passes(job)) EXPECT_GE(s, 0.020);
}

TEST(Probes, BandwidthOnASmallBufferIsPositive) {
  const auto r = measure_read_bandwidth({2, uint64_t{16} << 20, 3});
  EXPECT_EQ(r.pass_gbps.size(), 3u);
  EXPECT_EQ(r.bytes_per_pass, uint64_t{16} << 20);
  EXPECT_TRUE(std::isfinite(r.best_gbps));
  EXPECT_GT(r.best_gbps, 0.0);
  for (double g : r.pass_gbps) EXPECT_LE(g, r.best_gbps);
  EXPECT_THROW(measure_read_bandwidth({4, 512, 1}), InvalidArgument);
}

TEST(Probes, PeakFlopsListsEveryFamilyTheCpuHas) {
  const auto probes = measure_peak_flops({1, 1, 1 << 12});
  const auto& cpu = kernels::cpu_features();
  const size_t expected = (cpu.avx2 ? 1 : 0) + (cpu.avx512 ? 1 : 0) + (cpu.avx512 && cpu.avx512_bf16 ? 1 : 0) +
                          (cpu.avx512 && cpu.avx512_vnni ? 1 : 0) + (cpu.amx ? 1 : 0);
  ASSERT_EQ(probes.size(), expected);
  for (const auto& p : probes) {
    EXPECT_TRUE(std::isfinite(p.gflops)) << p.name;
    EXPECT_GT(p.gflops, 0.0) << p.name;
  }
}

}  // namespace
}  // namespace lemma::bench
