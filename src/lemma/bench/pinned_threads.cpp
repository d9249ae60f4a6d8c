#include "lemma/bench/pinned_threads.h"

#include <pthread.h>
#include <sched.h>

#include <barrier>
#include <chrono>
#include <thread>

#include "lemma/base/error.h"

namespace lemma::bench {

namespace {
// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  return cpus;
}

void pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}
}  // namespace

std::vector<double> run_parallel_passes(const ParallelPasses& job) {
  if (job.num_threads < 1 || job.passes < 1 || !job.body) {
    throw InvalidArgument("run_parallel_passes needs >= 1 thread, >= 1 pass and a body");
  }
  const std::vector<int> cpus = allowed_cpus();
  std::barrier sync(job.num_threads + 1);  // the workers and this (timing) thread
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(job.num_threads));
  for (int t = 0; t < job.num_threads; ++t) {
    workers.emplace_back([&, t] {
      if (!cpus.empty()) pin_current_thread(cpus[static_cast<size_t>(t) % cpus.size()]);
      if (job.setup) job.setup(t);
      sync.arrive_and_wait();  // setup done
      for (int pass = 0; pass < job.passes; ++pass) {
        sync.arrive_and_wait();  // start
        job.body(t);
        sync.arrive_and_wait();  // end
      }
    });
  }
  using Clock = std::chrono::steady_clock;
  std::vector<double> seconds;
  sync.arrive_and_wait();
  for (int pass = 0; pass < job.passes; ++pass) {
    sync.arrive_and_wait();
    const auto start = Clock::now();
    sync.arrive_and_wait();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  for (auto& w : workers) w.join();
  return seconds;
}

}  // namespace lemma::bench
