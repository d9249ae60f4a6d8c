// ThreadTeam: a persistent worker pool (G21) owned by a ForwardWorkspace, so each concurrent forward
// has its own team and no state is global. Workers are created once, pinned one per allowed CPU,
// and between jobs spin briefly on a generation counter, then park on a futex. A job is a range
// split into tiles that the caller and the workers take from a shared atomic counter (a tile
// queue), so a descheduled thread delays only the tiles it holds. Which thread runs a tile never
// changes what the tile computes: callers make each output depend on its tile's range only.
// parallel_for is not re-entrant and must be called from one thread at a time; it allocates
// nothing (the callable is passed by reference, not wrapped in std::function).
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace lemma {

// A non-owning reference to a callable `void(int64_t begin, int64_t end)`, or `void(int64_t begin,
// int64_t end, int worker)` for a job that needs per-thread state: `worker` in [0, team size) names
// the thread running the range (0 the caller, i the i-th worker; the same index in every job), so
// that two ranges running at once never share one and the caller can lend each thread its own
// buffers (ForwardWorkspace::kernel_scratch). Valid while the referenced callable lives
// (parallel_for's duration). Never allocates.
class RangeFnRef {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFnRef>>>
  RangeFnRef(F&& fn)  // NOLINT(google-explicit-constructor): implicit, like std::function
      : object_(const_cast<void*>(static_cast<const void*>(&fn))),
        call_([](void* object, int64_t begin, int64_t end, int worker) {
          auto& f = *static_cast<std::remove_reference_t<F>*>(object);
          if constexpr (std::is_invocable_v<decltype(f), int64_t, int64_t, int>) {
            f(begin, end, worker);
          } else {
            f(begin, end);
          }
        }) {}

  void operator()(int64_t begin, int64_t end, int worker = 0) const { call_(object_, begin, end, worker); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t, int);
};

class ThreadTeam {
 public:
  // `num_threads` >= 1 counts the caller; 1 means everything runs inline; 0 (or less) means one
  // thread per CPU this process may run on (default_size()). Workers are pinned to distinct
  // allowed CPUs when there are at least as many CPUs as threads and `pin_threads` is set
  // (RuntimeOptions::pin_threads).
  // Then a caller found running on a worker's CPU when it starts a job is moved off the workers'
  // CPUs for that job (its affinity is restored after it): sharing a CPU with a spinning worker
  // runs the job's tiles one after the other, at half speed or worse, until the scheduler moves it.
  explicit ThreadTeam(int num_threads, bool pin_threads = true);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // One thread per CPU in this process's affinity mask (at least 1).
  static int default_size();

  // Calls fn(begin, end[, worker]) on disjoint tiles covering [0, n), each `min_chunk` long or more (the last
  // may be shorter), a few per thread; a range under 2 * min_chunk runs inline as one call. Tiles are handed out from
  // an atomic counter to the caller and the workers. Blocks until all are done; rethrows the first
  // exception a tile threw (the other tiles still run).
  void parallel_for(int64_t n, int64_t min_chunk, RangeFnRef fn);

  // Same, with tiles of exactly `tile` elements (the last one shorter): the split is fixed by the
  // caller, whatever the thread count.
  void parallel_tiles(int64_t n, int64_t tile, RangeFnRef fn);

 private:
  void worker_loop(int index, int cpu);
  // When the calling thread is on a worker's CPU: saves its affinity into `saved`, moves it off
  // the workers' CPUs and returns true (restore `saved` after the job).
  bool move_caller_off_worker_cpus(cpu_set_t& saved) const;
  int run_tiles(uint32_t generation, int worker);  // returns the number of tiles this thread ran
  void run_tile(int64_t t, int worker);

  std::vector<std::thread> workers_;
  std::vector<int> worker_cpus_;  // the CPUs workers are pinned to (empty when not pinned)

  // The current job; written by the caller before it publishes `claim_`, read by the workers.
  std::atomic<const RangeFnRef*> job_fn_{nullptr};
  std::atomic<int64_t> job_n_{0};
  std::atomic<int64_t> job_tile_{1};
  std::atomic<int64_t> job_tiles_{0};

  // (generation << 32) | next tile index: tiles are claimed with a compare-exchange that also
  // checks the generation, so a late worker can never take a tile of a newer job.
  alignas(64) std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};  // futex word the workers park on
  std::atomic<int> parked_workers_{0};
  alignas(64) std::atomic<uint32_t> tiles_done_{0};  // futex word the caller parks on
  std::atomic<int> caller_parked_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int> started_workers_{0};  // the constructor waits for all: their set-up allocates

  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// fn over ranges of `rows` independent rows of `row_values` values each: on the team in chunks of
// about 16K values, inline without a team, with one thread, or when the rows hold little work.
// Rows must not depend on each other, so the split never changes a value.
void parallel_rows(ThreadTeam* team, int64_t rows, int64_t row_values, RangeFnRef fn);

}  // namespace lemma
