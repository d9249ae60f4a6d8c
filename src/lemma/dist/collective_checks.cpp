#include "lemma/dist/collective_checks.h"

namespace lemma::dist {

void check_rank(const Communicator& comm, int rank, const char* what) {
  if (rank < 0 || rank >= comm.size()) {
    fail<InvalidArgument>("dist: {} {} is outside group '{}' of {} ranks", what, rank, comm.name(), comm.size());
  }
}

void check_gather_sizes(const Communicator& comm, std::size_t mine, std::size_t gathered) {
  if (gathered != mine * static_cast<std::size_t>(comm.size())) {
    fail<InvalidArgument>("dist: all_gather on group '{}': output holds {} floats, expected {} ranks x {}",
                          comm.name(), gathered, comm.size(), mine);
  }
}

void check_scatter_sizes(const Communicator& comm, std::size_t input, std::size_t out) {
  if (input != out * static_cast<std::size_t>(comm.size())) {
    fail<InvalidArgument>("dist: reduce_scatter on group '{}': input holds {} floats, expected {} ranks x {}",
                          comm.name(), input, comm.size(), out);
  }
}

namespace {
void check_side(const Communicator& comm, const char* side, std::size_t bytes, std::span<const std::size_t> counts,
                std::span<const std::size_t> offsets) {
  const auto n = static_cast<std::size_t>(comm.size());
  if (counts.size() != n || offsets.size() != n) {
    fail<InvalidArgument>("dist: all_to_all_v on group '{}': {} counts/offsets have {}/{} entries, expected {}",
                          comm.name(), side, counts.size(), offsets.size(), n);
  }
  for (std::size_t r = 0; r < n; ++r) {
    if (offsets[r] > bytes || counts[r] > bytes - offsets[r]) {
      fail<InvalidArgument>("dist: all_to_all_v on group '{}': {} block for rank {} [{}, +{}) is outside the {}-byte buffer",
                            comm.name(), side, r, offsets[r], counts[r], bytes);
    }
  }
}
}  // namespace

void check_all_to_all_layout(const Communicator& comm, std::size_t send_bytes,
                             std::span<const std::size_t> send_counts, std::span<const std::size_t> send_offsets,
                             std::size_t recv_bytes, std::span<const std::size_t> recv_counts,
                             std::span<const std::size_t> recv_offsets) {
  check_side(comm, "send", send_bytes, send_counts, send_offsets);
  check_side(comm, "recv", recv_bytes, recv_counts, recv_offsets);
}

}  // namespace lemma::dist
