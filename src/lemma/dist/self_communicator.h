// A group of one rank: what `lemma` runs on without mpirun. Every collective is a copy (or nothing),
// so the single-process path needs no MPI and starts as fast as before. Not thread-safe (one user).
#pragma once

#include <string>

#include "lemma/dist/communicator.h"

namespace lemma::dist {

class SelfCommunicator final : public Communicator {
 public:
  explicit SelfCommunicator(std::string label = "world") : label_(std::move(label)) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return label_ + " (self)"; }

  void all_reduce(std::span<float> data, ReduceOp op) override;
  void all_gather(std::span<const float> mine, std::span<float> gathered) override;
  void reduce_scatter(std::span<const float> input, std::span<float> out) override;
  void broadcast(std::span<std::byte> data, int root) override;
  void all_to_all_v(std::span<const std::byte> send, std::span<const std::size_t> send_counts,
                    std::span<const std::size_t> send_offsets, std::span<std::byte> recv,
                    std::span<const std::size_t> recv_counts,
                    std::span<const std::size_t> recv_offsets) override;
  void send(std::span<const std::byte> data, int dest, int tag) override;
  void recv(std::span<std::byte> data, int source, int tag) override;
  void barrier() override {}
  std::unique_ptr<Communicator> split(int color, int key, const std::string& label) override;

 private:
  std::string label_;
};

}  // namespace lemma::dist
