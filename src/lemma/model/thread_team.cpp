#include "lemma/model/thread_team.h"

#include <algorithm>

namespace lemma {

namespace {
// Chunk `i` of `chunks` over [0, n).
std::pair<int64_t, int64_t> chunk_range(int64_t n, int chunks, int i) {
  const int64_t base = n / chunks, extra = n % chunks;
  const int64_t begin = i * base + std::min<int64_t>(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}
}  // namespace

ThreadTeam::ThreadTeam(int num_threads) {
  for (int i = 1; i < std::max(num_threads, 1); ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadTeam::~ThreadTeam() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadTeam::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock lock(mutex_);
    start_cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    if (index >= job_chunks_) continue;
    const auto* job = job_;
    const auto [begin, end] = chunk_range(job_n_, job_chunks_, index);
    lock.unlock();
    std::exception_ptr error;
    try {
      (*job)(begin, end);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

void ThreadTeam::parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int chunks = static_cast<int>(std::clamp<int64_t>(n / std::max<int64_t>(min_chunk, 1), 1, size()));
  if (chunks == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_ = chunks - 1;
    error_ = nullptr;
    ++generation_;
  }
  start_cv_.notify_all();
  std::exception_ptr error;
  try {
    const auto [begin, end] = chunk_range(n, chunks, 0);
    fn(begin, end);
  } catch (...) {
    error = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (!error) error = error_;
  lock.unlock();
  if (error) std::rethrow_exception(error);
}

}  // namespace lemma
