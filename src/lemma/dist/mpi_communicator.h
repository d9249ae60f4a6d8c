// The MPI backend of Communicator: every collective is built from nonblocking point-to-point
// messages polled against a deadline (a lost rank is a DistError naming it, never a hang), and every
// reduction adds in rank order (MPI_Allreduce's order is not fixed; ours is, so the bits are the
// same run to run and equal the shared-memory path's). One thread at a time per communicator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lemma/dist/communicator.h"
#include "lemma/dist/group_options.h"

namespace lemma::dist {

class MpiCommunicator final : public Communicator {
 public:
  struct Handle;  // the MPI_Comm's (mpi_handle.h)

  MpiCommunicator(std::unique_ptr<Handle> handle, std::string label, GroupOptions options);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return label_ + " (mpi)"; }

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
  // The new group gets a backend by the options' transport rule (shared memory or MPI).
  std::unique_ptr<Communicator> split(int color, int key, const std::string& label) override;
  // Always MPI: what the shared-memory backend splits its own MPI half with.
  std::unique_ptr<MpiCommunicator> split_mpi(int color, int key, const std::string& label);

  const Handle& handle() const { return *handle_; }
  const GroupOptions& options() const { return options_; }
  const std::string& label() const { return label_; }
  // "rank 3" or "rank 1 (world rank 3)".
  std::string describe_rank(int rank) const;
  // Why a wait on these ranks (of this group) timed out: the ones whose process is gone first,
  // e.g. "rank 1 (pid 4242) exited; no answer within 2000 ms (also silent: rank 0, waiting on it)",
  // else "no answer from rank 1 within 2000 ms (it died or is stuck)". A survivor that already
  // gave up and exited counts as exited too: the first rank to time out names only the lost one.
  std::string describe_silence(const std::vector<int>& silent) const;
  // Marks this group and its world failed (no later call may use it) and returns the message
  // "dist: <op> on group '<group_name>' (rank r of n): <what>".
  std::string record_failure(const char* op, const std::string& group_name, const std::string& what);
  [[noreturn]] void fail_collective(const char* op, const std::string& what) {
    throw DistError(record_failure(op, name(), what));
  }

 private:
  class Exchange;
  int next_tag();
  void throw_if_failed(const char* op) const;
  void all_reduce_by_gather(std::span<float> data, ReduceOp op);
  void all_reduce_by_chunks(std::span<float> data, ReduceOp op);

  std::unique_ptr<Handle> handle_;
  std::string label_;
  GroupOptions options_;
  int rank_ = 0;
  int size_ = 1;
  int tag_ = 0;
  std::string failure_;  // non-empty once a collective failed: the group is unusable after that
  std::vector<float> scratch_;
};

}  // namespace lemma::dist
