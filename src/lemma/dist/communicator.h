// A process group: the ranks that take part in collectives together (the world, or a TP/PP/EP/DP
// sub-group split from it). Every rank calls the same collectives in the same order with the same
// sizes; results are bitwise identical run to run (reductions add in rank order 0, 1, ..., N-1).
// A rank that does not answer within the group's timeout makes the call throw DistError naming it,
// on every surviving rank, never hang. One Communicator is used by one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "lemma/base/error.h"

namespace lemma::dist {

// A collective could not complete: a peer died, timed out, or sizes disagreed. The message names the
// group, the operation and the rank at fault.
class DistError : public Error {
 public:
  using Error::Error;
};

enum class ReduceOp { kSum, kMax };

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // For messages: "world", "tp", "pp", ... and the backend ("mpi", "shm", "threads").
  virtual std::string name() const = 0;

  // In place over every rank's `data` (same length everywhere); the fixed rank order makes the
  // result the same bits on every rank and every run.
  virtual void all_reduce(std::span<float> data, ReduceOp op = ReduceOp::kSum) = 0;
  // `gathered` = every rank's `mine`, rank-major; gathered.size() == size() * mine.size().
  virtual void all_gather(std::span<const float> mine, std::span<float> gathered) = 0;
  // Sum over ranks of `input` (size() * out.size() floats), rank r keeps block r in `out`.
  virtual void reduce_scatter(std::span<const float> input, std::span<float> out) = 0;
  // Raw bytes from `root` to everyone (step plans, token ids, sampled tokens).
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Rank r sends send[send_offsets[d] .. +send_counts[d]) to rank d and receives recv_counts[s]
  // bytes from each s at recv_offsets[s]. Counts must agree pairwise (checked).
  virtual void all_to_all_v(std::span<const std::byte> send, std::span<const std::size_t> send_counts,
                            std::span<const std::size_t> send_offsets, std::span<std::byte> recv,
                            std::span<const std::size_t> recv_counts,
                            std::span<const std::size_t> recv_offsets) = 0;
  virtual void send(std::span<const std::byte> data, int dest, int tag) = 0;
  virtual void recv(std::span<std::byte> data, int source, int tag) = 0;
  virtual void barrier() = 0;

  // Ranks with the same `color` form a new group, ordered by `key` (then by old rank). Collective
  // over this group. `label` names the new group in errors ("tp", "pp", ...).
  virtual std::unique_ptr<Communicator> split(int color, int key, const std::string& label) = 0;
};

}  // namespace lemma::dist
