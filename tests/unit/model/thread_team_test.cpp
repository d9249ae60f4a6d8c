// ThreadTeam (G21): the persistent pool's tile queue covers every index exactly once, keeps a
// caller-fixed split whatever the thread count, survives parking between jobs, and rethrows.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "lemma/base/error.h"
#include "lemma/model/thread_team.h"

namespace lemma {
namespace {

TEST(ThreadTeamPool, TilesCoverTheRangeOnceForEveryThreadCount) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadTeam team(threads);
    EXPECT_EQ(team.size(), threads);
    for (int64_t n : {1, 7, 64, 1000, 4097}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (int round = 0; round < 20; ++round) {
        team.parallel_for(n, 3, [&](int64_t b, int64_t e) {
          ASSERT_LT(b, e);
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
      }
      for (auto& h : hits) ASSERT_EQ(h.load(), 20) << threads << " threads, n=" << n;
    }
  }
}

TEST(ThreadTeamPool, ParallelTilesKeepsTheCallersSplit) {
  // Whatever the thread count, the tiles are [0, 5), [5, 10), ..., [45, 47).
  for (int threads : {1, 2, 4}) {
    ThreadTeam team(threads);
    std::vector<std::atomic<int64_t>> ends(47);
    for (auto& e : ends) e.store(-1);
    team.parallel_tiles(47, 5, [&](int64_t b, int64_t e) { ends[static_cast<size_t>(b)].store(e); });
    for (int64_t b = 0; b < 47; ++b) {
      const int64_t want = b % 5 == 0 ? std::min<int64_t>(b + 5, 47) : -1;
      EXPECT_EQ(ends[static_cast<size_t>(b)].load(), want) << threads << " threads, b=" << b;
    }
  }
}

// A range callable may take the worker index: in [0, size), 0 for the caller, and never held by two
// ranges at once, so each index can own per-thread buffers (ForwardWorkspace::kernel_scratch).
TEST(ThreadTeamPool, WorkerIndicesAreInRangeAndNeverShared) {
  for (int threads : {1, 2, 3}) {
    ThreadTeam team(threads);
    std::vector<std::atomic<int>> busy(static_cast<size_t>(threads));
    std::atomic<int> bad{0}, ranges{0};
    const auto claim = [&](int64_t, int64_t, int worker) {
      ranges.fetch_add(1);
      if (worker < 0 || worker >= threads || busy[static_cast<size_t>(worker)].exchange(1) != 0) {
        bad.fetch_add(1);
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));  // overlap with the other threads
      busy[static_cast<size_t>(worker)].store(0);
    };
    for (int round = 0; round < 20; ++round) team.parallel_tiles(40, 1, claim);
    team.parallel_for(1, 1, [&](int64_t, int64_t, int worker) { EXPECT_EQ(worker, 0); });  // inline: the caller
    parallel_rows(nullptr, 3, 1, [&](int64_t, int64_t, int worker) { EXPECT_EQ(worker, 0); });
    EXPECT_EQ(bad.load(), 0) << threads << " threads";
    EXPECT_EQ(ranges.load(), 20 * 40);
  }
}

TEST(ThreadTeamPool, WakesParkedWorkersAndUsesThem) {
  ThreadTeam team(2);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // long enough for the workers to park
    std::atomic<int> done{0};
    team.parallel_tiles(64, 1, [&](int64_t b, int64_t e) { done.fetch_add(static_cast<int>(e - b)); });
    EXPECT_EQ(done.load(), 64);
  }
  // Two tiles that each wait for the other can only finish if two threads run them at once.
  std::atomic<int> arrived{0};
  team.parallel_tiles(2, 1, [&](int64_t, int64_t) {
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  });
  EXPECT_EQ(arrived.load(), 2);
}

TEST(ThreadTeamPool, RethrowsAndStaysUsable) {
  ThreadTeam team(3);
  EXPECT_THROW(team.parallel_tiles(30, 1,
                                   [](int64_t b, int64_t) {
                                     if (b % 7 == 3) throw InvalidArgument("tile failed");
                                   }),
               InvalidArgument);
  std::atomic<int64_t> sum{0};
  team.parallel_tiles(100, 10, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
  EXPECT_EQ(sum.load(), 100);
}

TEST(ThreadTeamPool, BackToBackJobsOfChangingSizeRunEachTileOnce) {
  // Regression: a worker finishing one job could claim a phantom tile of it after reading the next
  // job's (larger) tile count, and run that tile of the half-published next job twice.
  for (int threads : {2, 3}) {
    ThreadTeam team(threads);
    uint32_t state = 12345;
    for (int job = 0; job < 100000; ++job) {
      state = state * 1664525u + 1013904223u;
      const int64_t n = 1 + (state >> 8) % 40;
      std::atomic<int64_t> sum{0};
      team.parallel_tiles(n, 1, [&](int64_t b, int64_t e) { sum.fetch_add(e - b, std::memory_order_relaxed); });
      ASSERT_EQ(sum.load(), n) << threads << " threads, job " << job;
    }
  }
}

TEST(ThreadTeamPool, MovesACallerOffTheWorkersCpusForAJob) {
  // A caller that starts a job on a pinned worker's CPU would share it with the spinning worker.
  if (ThreadTeam::default_size() < 2) GTEST_SKIP() << "needs two CPUs";
  std::thread caller([] {  // its own thread, whose affinity the test changes
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    const int worker_cpu = cpus[1];  // where the team pins its one worker
    ThreadTeam team(2);
    for (int job = 0; job < 3; ++job) {
      bool on_worker_cpu = false;
      for (int attempt = 0; attempt < 20 && !on_worker_cpu; ++attempt) {
        cpu_set_t only;
        CPU_ZERO(&only);
        CPU_SET(worker_cpu, &only);
        ASSERT_EQ(sched_setaffinity(0, sizeof(only), &only), 0);  // now on the worker's CPU
        ASSERT_EQ(sched_setaffinity(0, sizeof(allowed), &allowed), 0);  // free to move, still there
        on_worker_cpu = sched_getcpu() == worker_cpu;
      }
      ASSERT_TRUE(on_worker_cpu) << "could not place the caller on CPU " << worker_cpu;
      const auto me = std::this_thread::get_id();
      std::atomic<int> tiles{0}, caller_tiles_on_worker_cpu{0};
      team.parallel_for(64, 1, [&](int64_t b, int64_t e) {
        if (std::this_thread::get_id() == me && sched_getcpu() == worker_cpu) ++caller_tiles_on_worker_cpu;
        tiles += static_cast<int>(e - b);
      });
      EXPECT_EQ(tiles.load(), 64);
      EXPECT_EQ(caller_tiles_on_worker_cpu.load(), 0);
      cpu_set_t after;  // the caller's own affinity is back
      CPU_ZERO(&after);
      ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
      EXPECT_TRUE(CPU_EQUAL(&after, &allowed));
    }
  });
  caller.join();
}

TEST(ThreadTeamPool, DefaultSizeIsOnePerAllowedCpu) {
  EXPECT_GE(ThreadTeam::default_size(), 1);
  ThreadTeam team(0);
  EXPECT_EQ(team.size(), ThreadTeam::default_size());
}

}  // namespace
}  // namespace lemma
