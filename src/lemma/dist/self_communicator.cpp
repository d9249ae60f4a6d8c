#include "lemma/dist/self_communicator.h"

#include <algorithm>

#include "lemma/dist/collective_checks.h"

namespace lemma::dist {

void SelfCommunicator::all_reduce(std::span<float>, ReduceOp) {}

void SelfCommunicator::all_gather(std::span<const float> mine, std::span<float> gathered) {
  check_gather_sizes(*this, mine.size(), gathered.size());
  std::copy(mine.begin(), mine.end(), gathered.begin());
}

void SelfCommunicator::reduce_scatter(std::span<const float> input, std::span<float> out) {
  check_scatter_sizes(*this, input.size(), out.size());
  std::copy(input.begin(), input.end(), out.begin());
}

void SelfCommunicator::broadcast(std::span<std::byte>, int root) { check_rank(*this, root, "broadcast root"); }

void SelfCommunicator::all_to_all_v(std::span<const std::byte> send, std::span<const std::size_t> send_counts,
                                    std::span<const std::size_t> send_offsets, std::span<std::byte> recv,
                                    std::span<const std::size_t> recv_counts,
                                    std::span<const std::size_t> recv_offsets) {
  check_all_to_all_layout(*this, send.size(), send_counts, send_offsets, recv.size(), recv_counts, recv_offsets);
  if (send_counts[0] != recv_counts[0]) {
    fail<InvalidArgument>("dist: all_to_all_v on group '{}': rank 0 sends itself {} bytes but expects {}", name(),
                    send_counts[0], recv_counts[0]);
  }
  std::copy_n(send.data() + send_offsets[0], send_counts[0], recv.data() + recv_offsets[0]);
}

void SelfCommunicator::send(std::span<const std::byte>, int dest, int) {
  fail<DistError>("dist: send on group '{}': a group of one rank has no peer {} to send to", name(), dest);
}

void SelfCommunicator::recv(std::span<std::byte>, int source, int) {
  fail<DistError>("dist: recv on group '{}': a group of one rank has no peer {} to receive from", name(), source);
}

std::unique_ptr<Communicator> SelfCommunicator::split(int, int, const std::string& label) {
  return std::make_unique<SelfCommunicator>(label);
}

}  // namespace lemma::dist
