#include "lemma/model/thread_team.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "lemma/base/trace.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LEMMA_CPU_RELAX() _mm_pause()
#else
#define LEMMA_CPU_RELAX() ((void)0)
#endif

namespace lemma {

namespace {

// How long a worker spins for the next job before parking, and the caller for the last tiles.
// Decode issues a job every few tens of microseconds inside a step, so spinning keeps the workers
// hot across a step; between steps (sampling, scheduling) they park and cost nothing.
constexpr auto kWorkerSpin = std::chrono::microseconds(200);
constexpr auto kCallerSpin = std::chrono::microseconds(100);
constexpr int kTilesPerThread = 4;  // parallel_for's tiles: enough to rebalance a slow thread

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

// Spins until pred() holds or `budget` has passed; returns pred()'s last value.
template <typename Pred>
bool spin_until(Pred pred, std::chrono::microseconds budget) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      LEMMA_CPU_RELAX();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace

int ThreadTeam::default_size() { return std::max<int>(1, static_cast<int>(allowed_cpus().size())); }

ThreadTeam::ThreadTeam(int num_threads, bool pin_threads) {
  const int n = num_threads <= 0 ? default_size() : num_threads;
  const std::vector<int> cpus = allowed_cpus();
  // Worker i goes to the i-th allowed CPU; the caller keeps its own affinity (it is the caller's
  // thread), and the scheduler will usually leave it on the first CPU the workers do not use.
  const bool pin = pin_threads && n > 1 && static_cast<int>(cpus.size()) >= n;
  workers_.reserve(static_cast<size_t>(n - 1));
  for (int i = 1; i < n; ++i) {
    const int cpu = pin ? cpus[static_cast<size_t>(i)] : -1;
    if (pin) worker_cpus_.push_back(cpu);
    workers_.emplace_back([this, i, cpu] { worker_loop(i, cpu); });
  }
  // A worker's set-up (its trace buffer) allocates: finish it here, not in a later forward, which
  // on a loaded machine could be the first one a late-starting worker sees.
  while (started_workers_.load(std::memory_order_acquire) < n - 1) std::this_thread::yield();
}

ThreadTeam::~ThreadTeam() {
  stopping_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(&generation_, INT_MAX);
  for (auto& t : workers_) t.join();
}

void ThreadTeam::worker_loop(int index, int cpu) {
  trace::name_this_thread("forward worker");
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);  // best effort: a failure only loses the pinning
  }
  started_workers_.fetch_add(1, std::memory_order_release);
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    if (g == seen) {
      spin_until([&] { return (g = generation_.load(std::memory_order_acquire)) != seen; }, kWorkerSpin);
    }
    if (g == seen) {
      parked_workers_.fetch_add(1, std::memory_order_seq_cst);
      while ((g = generation_.load(std::memory_order_seq_cst)) == seen) futex_wait(&generation_, seen);
      parked_workers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    seen = g;
    const uint64_t start_ns = trace::enabled() ? trace::now_ns() : 0;
    const int tiles = run_tiles(g, index);
    if (start_ns != 0 && tiles > 0) trace::record("tiles", "worker", start_ns, trace::now_ns(), "tiles", tiles);
  }
}

void ThreadTeam::run_tile(int64_t t, int worker) {
  const int64_t n = job_n_.load(std::memory_order_relaxed);
  const int64_t tile = job_tile_.load(std::memory_order_relaxed);
  const int64_t begin = t * tile;
  const int64_t end = std::min(n, begin + tile);
  try {
    (*job_fn_.load(std::memory_order_relaxed))(begin, end, worker);
  } catch (...) {
    std::lock_guard lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

int ThreadTeam::run_tiles(uint32_t generation, int worker) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  int ran = 0;
  for (;;) {
    if (static_cast<uint32_t>(c >> 32) != generation) return ran;  // a newer job (or none) is out
    // Read after seeing this job's generation in claim_ (published with release after the fields);
    // the fields cannot change before every tile of this job is claimed and done.
    // job_tiles_ may already hold the next job's count when this job is exhausted; the caller
    // closes claim_ (seq_cst) before it writes the next job's fields, so a claim based on a
    // count read after that point fails its compare-exchange (all three are seq_cst).
    const auto tiles = static_cast<uint32_t>(job_tiles_.load(std::memory_order_seq_cst));
    const auto t = static_cast<uint32_t>(c);
    if (t >= tiles) return ran;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_seq_cst, std::memory_order_acquire)) continue;
    run_tile(t, worker);
    ++ran;
    const uint32_t done = tiles_done_.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (done == tiles && caller_parked_.load(std::memory_order_seq_cst) != 0) futex_wake(&tiles_done_, 1);
    c = claim_.load(std::memory_order_acquire);
  }
}

// A check per job (getcpu is a vDSO call); the two affinity calls only when the caller is
// misplaced, which after a move is rare (the scheduler keeps a running thread where it is).
bool ThreadTeam::move_caller_off_worker_cpus(cpu_set_t& saved) const {
  const int cpu = sched_getcpu();
  if (std::find(worker_cpus_.begin(), worker_cpus_.end(), cpu) == worker_cpus_.end()) return false;
  CPU_ZERO(&saved);
  if (sched_getaffinity(0, sizeof(saved), &saved) != 0) return false;
  cpu_set_t elsewhere = saved;
  for (int c : worker_cpus_) CPU_CLR(c, &elsewhere);
  return CPU_COUNT(&elsewhere) > 0 && sched_setaffinity(0, sizeof(elsewhere), &elsewhere) == 0;
}

void ThreadTeam::parallel_tiles(int64_t n, int64_t tile, RangeFnRef fn) {
  if (n <= 0) return;
  tile = std::max<int64_t>(tile, 1);
  const int64_t tiles = (n + tile - 1) / tile;
  if (tiles == 1 || workers_.empty()) {
    for (int64_t b = 0; b < n; b += tile) fn(b, std::min(n, b + tile));
    return;
  }
  cpu_set_t caller_affinity;
  const bool moved = !worker_cpus_.empty() && move_caller_off_worker_cpus(caller_affinity);
  struct RestoreAffinity {
    bool active;
    const cpu_set_t& mask;
    ~RestoreAffinity() {
      if (active) sched_setaffinity(0, sizeof(mask), &mask);
    }
  } restore{moved, caller_affinity};
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  // Close the previous job first: its claim word would otherwise still accept a compare-exchange
  // from a worker that read the new job's tile count (a phantom tile running a half-written job).
  claim_.store((static_cast<uint64_t>(generation) << 32) | 0xFFFFFFFFu, std::memory_order_seq_cst);
  job_fn_.store(&fn, std::memory_order_relaxed);
  job_n_.store(n, std::memory_order_relaxed);
  job_tile_.store(tile, std::memory_order_relaxed);
  job_tiles_.store(tiles, std::memory_order_seq_cst);
  tiles_done_.store(0, std::memory_order_relaxed);
  error_ = nullptr;  // no worker touches it: all of the previous job's tiles are done
  claim_.store(static_cast<uint64_t>(generation) << 32, std::memory_order_release);
  generation_.store(generation, std::memory_order_seq_cst);
  if (parked_workers_.load(std::memory_order_seq_cst) > 0) futex_wake(&generation_, INT_MAX);

  run_tiles(generation, 0);  // the caller is worker 0

  const auto total = static_cast<uint32_t>(tiles);
  if (!spin_until([&] { return tiles_done_.load(std::memory_order_acquire) == total; }, kCallerSpin)) {
    caller_parked_.store(1, std::memory_order_seq_cst);
    uint32_t done;
    while ((done = tiles_done_.load(std::memory_order_seq_cst)) != total) futex_wait(&tiles_done_, done);
    caller_parked_.store(0, std::memory_order_relaxed);
  }
  if (error_) {
    std::exception_ptr error = std::move(error_);
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void ThreadTeam::parallel_for(int64_t n, int64_t min_chunk, RangeFnRef fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(min_chunk, 1);
  if (workers_.empty() || n < 2 * min_chunk) {
    fn(0, n);
    return;
  }
  const int64_t want_tiles = static_cast<int64_t>(size()) * kTilesPerThread;
  const int64_t tile = std::max(min_chunk, (n + want_tiles - 1) / want_tiles);
  parallel_tiles(n, tile, fn);
}

void parallel_rows(ThreadTeam* team, int64_t rows, int64_t row_values, RangeFnRef fn) {
  if (team == nullptr || team->size() == 1) {
    fn(0, rows);
    return;
  }
  team->parallel_for(rows, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(row_values, 1)), fn);
}

}  // namespace lemma
