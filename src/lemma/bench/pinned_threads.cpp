#include "lemma/bench/pinned_threads.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
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
  // Each thread stamps its own pass start and end around its body, so a timing thread that is
  // descheduled at the wrong moment (busy machines) cannot shorten a pass: a pass lasts from the
  // earliest start to the latest end.
  using Clock = std::chrono::steady_clock;
  const size_t stamps = static_cast<size_t>(job.num_threads) * static_cast<size_t>(job.passes);
  std::vector<Clock::time_point> starts(stamps), ends(stamps);
  std::barrier sync(job.num_threads);
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(job.num_threads));
  for (int t = 0; t < job.num_threads; ++t) {
    workers.emplace_back([&, t] {
      if (!cpus.empty()) pin_current_thread(cpus[static_cast<size_t>(t) % cpus.size()]);
      if (job.setup) job.setup(t);
      for (int pass = 0; pass < job.passes; ++pass) {
        const size_t slot = static_cast<size_t>(pass) * static_cast<size_t>(job.num_threads) + static_cast<size_t>(t);
        sync.arrive_and_wait();  // every thread is ready (set up, previous pass done)
        starts[slot] = Clock::now();
        job.body(t);
        ends[slot] = Clock::now();
      }
    });
  }
  for (auto& w : workers) w.join();
  std::vector<double> seconds;
  for (int pass = 0; pass < job.passes; ++pass) {
    const auto first = starts.begin() + pass * job.num_threads;
    const auto last = ends.begin() + pass * job.num_threads;
    const auto start = *std::min_element(first, first + job.num_threads);
    const auto end = *std::max_element(last, last + job.num_threads);
    seconds.push_back(std::chrono::duration<double>(end - start).count());
  }
  return seconds;
}

}  // namespace lemma::bench
