// ThreadCommunicator: a process group of N ranks inside one process, one thread per rank, over
// shared memory: each collective publishes every rank's buffer in a shared slot, meets at a barrier,
// lets each rank read the others' buffers, and meets again before anyone may touch them. Reductions
// add in rank order 0, 1, ..., N-1 for every element, as the MPI and shared-memory backends do, so
// tensor parallelism can be tested (and timed) in one process with the same bits.
// Each rank's Communicator is used by that rank's thread only; the group's state is shared and
// guarded by one mutex. A rank missing a collective for longer than the timeout makes every waiting
// rank throw DistError naming the absent ranks, and breaks the group (later calls throw at once).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lemma/dist/communicator.h"

namespace lemma::dist {

struct ThreadGroupState;  // thread_communicator.cpp

struct ThreadGroupOptions {
  std::string label = "world";                       // the group's name in errors
  std::chrono::milliseconds timeout{60000};          // how long a collective waits for the slowest rank
};

class ThreadCommunicator final : public Communicator {
 public:
  // N communicators of one new group: element r is rank r's (hand each to its own thread).
  // Throws InvalidArgument unless size >= 1.
  static std::vector<std::unique_ptr<Communicator>> create_group(int size, const ThreadGroupOptions& options = {});

  ThreadCommunicator(std::shared_ptr<ThreadGroupState> group, int rank);
  ~ThreadCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override;
  std::string name() const override;

  void all_reduce(std::span<float> data, ReduceOp op = ReduceOp::kSum) override;
  void all_gather(std::span<const float> mine, std::span<float> gathered) override;
  void reduce_scatter(std::span<const float> input, std::span<float> out) override;
  void broadcast(std::span<std::byte> data, int root) override;
  void all_to_all_v(std::span<const std::byte> send, std::span<const std::size_t> send_counts,
                    std::span<const std::size_t> send_offsets, std::span<std::byte> recv,
                    std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_offsets) override;
  void send(std::span<const std::byte> data, int dest, int tag) override;
  void recv(std::span<std::byte> data, int source, int tag) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key, const std::string& label) override;

 private:
  std::shared_ptr<ThreadGroupState> group_;
  int rank_ = 0;
  std::vector<float> reduced_;  // all_reduce's result before it is copied back (others still read `data`)
};

// Runs fn(r) for every rank r of [0, size) on a thread of its own (rank 0 on the caller's) and
// waits for all; then rethrows the lowest rank's exception, if any. A rank that throws inside a
// collective leaves the others to their group's timeout (they throw DistError naming it).
void run_rank_threads(int size, const std::function<void(int rank)>& fn);

}  // namespace lemma::dist
