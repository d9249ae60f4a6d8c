// The shared-memory backend, for a group whose ranks all live on one host: each rank owns a header
// (arrival counter) and two data slots in one segment that every rank maps (MPI_Win_allocate_shared),
// and a collective is "copy in, arrive, wait for every rank's arrival, read the others' slots" with
// no MPI call on the way, so a small all-reduce costs one round of cache-line flags instead of MPI's
// per-message latency. Reductions use reduce_in_rank_order, so the bits equal the MPI backend's.
// all_to_all_v, send and recv go through the group's MPI communicator. One thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "lemma/dist/communicator.h"
#include "lemma/dist/mpi_communicator.h"

namespace lemma::dist {

class ShmCommunicator final : public Communicator {
 public:
  // Collective over `mpi`'s group, every rank of which must be on this host.
  explicit ShmCommunicator(std::unique_ptr<MpiCommunicator> mpi);
  ~ShmCommunicator() override;
  ShmCommunicator(const ShmCommunicator&) = delete;
  ShmCommunicator& operator=(const ShmCommunicator&) = delete;

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  std::string name() const override { return mpi_->label() + " (shm)"; }

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
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key, const std::string& label) override;

 private:
  struct Segment;  // the MPI window and each rank's header and slots

  // Publishes this rank's arrival (and the byte count it is working on) and waits for everyone's;
  // a rank that does not arrive in time, or arrives with another byte count, is a DistError.
  void arrive_and_wait(const char* op, std::uint64_t bytes);
  // Rank r's slot for the current operation (they alternate, so writing the next operation's data
  // never overwrites what a slower rank still reads).
  std::byte* slot(int r) const;
  float* float_slot(int r) const { return reinterpret_cast<float*>(slot(r)); }
  void next_operation() { ++operations_; }
  void all_reduce_piece(std::span<float> piece, ReduceOp op);
  void throw_if_failed(const char* op) const;
  [[noreturn]] void fail_collective(const char* op, const std::string& what);

  std::unique_ptr<MpiCommunicator> mpi_;
  std::unique_ptr<Segment> segment_;
  std::size_t slot_bytes_ = 0;
  std::uint64_t arrivals_ = 0;    // arrivals published by this rank so far
  std::uint64_t operations_ = 0;  // slot parity
  std::string failure_;
  std::vector<const float*> sources_;
};

}  // namespace lemma::dist
