// ThreadTeam: a fixed set of worker threads that run one parallel_for at a time, splitting a range
// into one contiguous chunk per thread (the caller's thread takes chunk 0). Owned by a
// ForwardWorkspace, so each concurrent forward has its own team and no state is global.
// parallel_for is not re-entrant and must be called from one thread at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lemma {

class ThreadTeam {
 public:
  // `num_threads` >= 1 counts the caller; 1 means everything runs inline.
  explicit ThreadTeam(int num_threads);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n), at most size() of them, each at least
  // `min_chunk` long (so small ranges stay on fewer threads). Blocks until all are done; rethrows
  // the first exception a chunk threw.
  void parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

}  // namespace lemma
