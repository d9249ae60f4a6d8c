#include "lemma/dist/thread_communicator.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "lemma/dist/reduce.h"

namespace lemma::dist {

// What one rank brings to the collective in progress (pointers stay valid until the closing barrier).
struct Slot {
  const char* op = nullptr;
  const void* in = nullptr;
  size_t in_size = 0;  // floats for the float collectives, bytes otherwise
  const size_t* counts = nullptr;
  const size_t* offsets = nullptr;
  int root = 0;
  int color = 0;
  int key = 0;
  std::shared_ptr<ThreadGroupState> child = {};  // split(): the new group, set by its first member
};

struct ThreadGroupState {
  int size = 0;
  ThreadGroupOptions options;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::atomic<uint64_t> generation{0};
  std::vector<char> present;  // who reached the barrier now open (to name the absent ones)
  std::string broken;         // the first failure; every later call throws it
  std::vector<Slot> slots;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<std::byte>>> mailbox;  // (source, dest, tag)

  [[noreturn]] void fail_broken() const { throw DistError(broken); }

  // Every rank arrives or the timeout names who did not. Spins briefly first: a collective's two
  // barriers are microseconds apart when the ranks are in step (decode: two per layer).
  void barrier(int rank, const char* op) {
    std::unique_lock lock(mu);
    if (!broken.empty()) fail_broken();
    const uint64_t gen = generation.load();
    present[static_cast<size_t>(rank)] = 1;
    if (++arrived == size) {
      arrived = 0;
      std::fill(present.begin(), present.end(), 0);
      generation.fetch_add(1);
      cv.notify_all();
      return;
    }
    lock.unlock();
    for (int spin = 0; spin < 4000 && generation.load(std::memory_order_acquire) == gen; ++spin)
      if (spin % 64 == 63) std::this_thread::yield();
    lock.lock();
    const auto deadline = std::chrono::steady_clock::now() + options.timeout;
    const bool done = cv.wait_until(lock, deadline, [&] { return generation.load() != gen || !broken.empty(); });
    if (generation.load() != gen) return;
    if (done) fail_broken();
    std::string absent;
    for (int r = 0; r < size; ++r)
      if (!present[static_cast<size_t>(r)]) absent += fmt::format("{}{}", absent.empty() ? "" : ", ", r);
    broken = fmt::format("threads group '{}': {}: rank(s) {} did not arrive within {} ms (seen by rank {})",
                         options.label, op, absent, options.timeout.count(), rank);
    cv.notify_all();
    fail_broken();
  }
};

namespace {

// Publishes `mine`, waits for everyone, checks they all call `op`, runs `work` over every rank's
// slot, and waits again so that no rank changes its buffers while another still reads them.
template <typename Work>
void collective(ThreadGroupState& g, int rank, Slot mine, Work&& work) {
  const char* op = mine.op;
  g.slots[static_cast<size_t>(rank)] = std::move(mine);
  g.barrier(rank, op);
  std::string error;
  for (int r = 0; r < g.size && error.empty(); ++r)
    if (std::strcmp(g.slots[static_cast<size_t>(r)].op, op) != 0)
      error = fmt::format("threads group '{}': rank {} called {} while rank {} called {}", g.options.label, r,
                          g.slots[static_cast<size_t>(r)].op, rank, op);
  if (error.empty()) {
    try {
      work(std::span<const Slot>(g.slots));
    } catch (const DistError& e) {
      error = e.what();
    }
  }
  g.barrier(rank, op);
  if (!error.empty()) throw DistError(error);
}

// Every rank's in_size must equal rank 0's (the check is the same on every rank, so all throw).
void check_same_size(const ThreadGroupState& g, std::span<const Slot> slots, const char* what) {
  for (int r = 1; r < g.size; ++r)
    if (slots[static_cast<size_t>(r)].in_size != slots[0].in_size)
      throw DistError(fmt::format("threads group '{}': {}: rank {} gave {} elements, rank 0 gave {}", g.options.label,
                                  what, r, slots[static_cast<size_t>(r)].in_size, slots[0].in_size));
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> ThreadCommunicator::create_group(int size, const ThreadGroupOptions& options) {
  if (size < 1) throw InvalidArgument(fmt::format("ThreadCommunicator: group size must be >= 1, got {}", size));
  auto state = std::make_shared<ThreadGroupState>();
  state->size = size;
  state->options = options;
  state->present.assign(static_cast<size_t>(size), 0);
  state->slots.resize(static_cast<size_t>(size));
  std::vector<std::unique_ptr<Communicator>> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(std::make_unique<ThreadCommunicator>(state, r));
  return ranks;
}

ThreadCommunicator::ThreadCommunicator(std::shared_ptr<ThreadGroupState> group, int rank)
    : group_(std::move(group)), rank_(rank) {}
ThreadCommunicator::~ThreadCommunicator() = default;

int ThreadCommunicator::size() const { return group_->size; }
std::string ThreadCommunicator::name() const { return group_->options.label + " (threads)"; }

void ThreadCommunicator::all_reduce(std::span<float> data, ReduceOp op) {
  reduced_.resize(data.size());
  collective(*group_, rank_, {.op = "all_reduce", .in = data.data(), .in_size = data.size()}, [&](std::span<const Slot> s) {
    check_same_size(*group_, s, "all_reduce");
    std::vector<const float*> sources;
    for (const Slot& slot : s) sources.push_back(static_cast<const float*>(slot.in));
    reduce_in_rank_order(reduced_, sources, op);  // the backends' one reduction: the same bits
  });
  std::copy(reduced_.begin(), reduced_.end(), data.begin());
}

void ThreadCommunicator::all_gather(std::span<const float> mine, std::span<float> gathered) {
  if (gathered.size() != mine.size() * static_cast<size_t>(size()))
    throw DistError(fmt::format("threads group '{}': all_gather: rank {}: {} floats to gather {} per rank from {} ranks",
                                group_->options.label, rank_, gathered.size(), mine.size(), size()));
  collective(*group_, rank_, {.op = "all_gather", .in = mine.data(), .in_size = mine.size()}, [&](std::span<const Slot> s) {
    check_same_size(*group_, s, "all_gather");
    for (size_t r = 0; r < s.size(); ++r)
      std::copy_n(static_cast<const float*>(s[r].in), mine.size(), gathered.begin() + static_cast<ptrdiff_t>(r * mine.size()));
  });
}

void ThreadCommunicator::reduce_scatter(std::span<const float> input, std::span<float> out) {
  if (input.size() != out.size() * static_cast<size_t>(size()))
    throw DistError(fmt::format("threads group '{}': reduce_scatter: rank {}: {} floats in for {} out on {} ranks",
                                group_->options.label, rank_, input.size(), out.size(), size()));
  collective(*group_, rank_, {.op = "reduce_scatter", .in = input.data(), .in_size = input.size()}, [&](std::span<const Slot> s) {
    check_same_size(*group_, s, "reduce_scatter");
    const size_t first = static_cast<size_t>(rank_) * out.size();
    std::vector<const float*> sources;
    for (const Slot& slot : s) sources.push_back(static_cast<const float*>(slot.in) + first);
    reduce_in_rank_order(out, sources, ReduceOp::kSum);
  });
}

void ThreadCommunicator::broadcast(std::span<std::byte> data, int root) {
  if (root < 0 || root >= size())
    throw DistError(fmt::format("threads group '{}': broadcast: root {} outside [0, {})", group_->options.label, root, size()));
  collective(*group_, rank_, {.op = "broadcast", .in = data.data(), .in_size = data.size(), .root = root},
             [&](std::span<const Slot> s) {
               check_same_size(*group_, s, "broadcast");
               for (size_t r = 1; r < s.size(); ++r)
                 if (s[r].root != s[0].root)
                   throw DistError(fmt::format("threads group '{}': broadcast: rank {} names root {}, rank 0 root {}",
                                               group_->options.label, r, s[r].root, s[0].root));
               if (rank_ != root) std::memcpy(data.data(), s[static_cast<size_t>(root)].in, data.size());
             });
}

void ThreadCommunicator::all_to_all_v(std::span<const std::byte> send, std::span<const std::size_t> send_counts,
                                      std::span<const std::size_t> send_offsets, std::span<std::byte> recv,
                                      std::span<const std::size_t> recv_counts,
                                      std::span<const std::size_t> recv_offsets) {
  const auto n = static_cast<size_t>(size());
  if (send_counts.size() != n || send_offsets.size() != n || recv_counts.size() != n || recv_offsets.size() != n)
    throw DistError(fmt::format("threads group '{}': all_to_all_v: rank {}: counts and offsets need {} entries each",
                                group_->options.label, rank_, n));
  for (size_t d = 0; d < n; ++d)
    if (send_offsets[d] + send_counts[d] > send.size() || recv_offsets[d] + recv_counts[d] > recv.size())
      throw DistError(fmt::format("threads group '{}': all_to_all_v: rank {}: peer {}'s range is outside the buffer",
                                  group_->options.label, rank_, d));
  Slot mine{.op = "all_to_all_v", .in = send.data(), .in_size = send.size(), .counts = send_counts.data(),
            .offsets = send_offsets.data()};
  collective(*group_, rank_, mine, [&](std::span<const Slot> s) {
    const auto me = static_cast<size_t>(rank_);
    for (size_t src = 0; src < n; ++src) {
      if (s[src].counts[me] != recv_counts[src])
        throw DistError(fmt::format("threads group '{}': all_to_all_v: rank {} sends {} bytes to rank {}, which expects {}",
                                    group_->options.label, src, s[src].counts[me], me, recv_counts[src]));
      std::memcpy(recv.data() + recv_offsets[src], static_cast<const std::byte*>(s[src].in) + s[src].offsets[me],
                  recv_counts[src]);
    }
  });
}

void ThreadCommunicator::send(std::span<const std::byte> data, int dest, int tag) {
  if (dest < 0 || dest >= size())
    throw DistError(fmt::format("threads group '{}': send: rank {} to {} outside [0, {})", group_->options.label, rank_, dest, size()));
  std::lock_guard lock(group_->mu);  // buffered: the message is copied, the sender goes on
  group_->mailbox[{rank_, dest, tag}].emplace_back(data.begin(), data.end());
  group_->cv.notify_all();
}

void ThreadCommunicator::recv(std::span<std::byte> data, int source, int tag) {
  if (source < 0 || source >= size())
    throw DistError(fmt::format("threads group '{}': recv: rank {} from {} outside [0, {})", group_->options.label, rank_, source, size()));
  ThreadGroupState& g = *group_;
  std::unique_lock lock(g.mu);
  auto& queue = g.mailbox[{source, rank_, tag}];
  if (!g.cv.wait_for(lock, g.options.timeout, [&] { return !queue.empty() || !g.broken.empty(); }))
    throw DistError(fmt::format("threads group '{}': recv: rank {} got nothing from rank {} (tag {}) within {} ms",
                                g.options.label, rank_, source, tag, g.options.timeout.count()));
  if (queue.empty()) g.fail_broken();
  if (queue.front().size() != data.size())
    throw DistError(fmt::format("threads group '{}': recv: rank {} expects {} bytes from rank {} (tag {}), got {}",
                                g.options.label, rank_, data.size(), source, tag, queue.front().size()));
  std::memcpy(data.data(), queue.front().data(), data.size());
  queue.pop_front();
}

void ThreadCommunicator::barrier() {
  collective(*group_, rank_, {.op = "barrier"}, [](std::span<const Slot>) {});
}

std::unique_ptr<Communicator> ThreadCommunicator::split(int color, int key, const std::string& label) {
  ThreadGroupState& g = *group_;
  std::vector<int> members;  // old ranks of my color, ordered by (key, old rank)
  g.slots[static_cast<size_t>(rank_)] = {.op = "split", .color = color, .key = key};
  g.barrier(rank_, "split");
  for (int r = 0; r < g.size; ++r)
    if (g.slots[static_cast<size_t>(r)].color == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return g.slots[static_cast<size_t>(a)].key < g.slots[static_cast<size_t>(b)].key;
  });
  if (members.front() == rank_) {  // the first listed member makes the new group's state
    auto child = std::make_shared<ThreadGroupState>();
    child->size = static_cast<int>(members.size());
    child->options = {label, g.options.timeout};
    child->present.assign(members.size(), 0);
    child->slots.resize(members.size());
    g.slots[static_cast<size_t>(rank_)].child = std::move(child);
  }
  g.barrier(rank_, "split");
  std::shared_ptr<ThreadGroupState> child = g.slots[static_cast<size_t>(members.front())].child;
  const auto new_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  g.barrier(rank_, "split");  // everyone took its group: the slots may be reused
  return std::make_unique<ThreadCommunicator>(std::move(child), new_rank);
}

void run_rank_threads(int size, const std::function<void(int rank)>& fn) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(std::max(size, 0)));
  const auto guarded = [&](int r) {
    try {
      fn(r);
    } catch (...) {
      errors[static_cast<size_t>(r)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < size; ++r) threads.emplace_back(guarded, r);
  if (size > 0) guarded(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace lemma::dist
