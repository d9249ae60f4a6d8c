// Argument checks every backend runs before a collective, so that a caller's mistake is an
// InvalidArgument naming the group, the operation and the sizes, the same whichever backend runs.
// (Sizes that disagree *between* ranks are found by the backends themselves: DistError.)
#pragma once

#include <cstddef>
#include <span>

#include "lemma/dist/communicator.h"

namespace lemma::dist {

void check_rank(const Communicator& comm, int rank, const char* what);
// gathered.size() == size() * mine.size()
void check_gather_sizes(const Communicator& comm, std::size_t mine, std::size_t gathered);
// input.size() == size() * out.size()
void check_scatter_sizes(const Communicator& comm, std::size_t input, std::size_t out);
// One count and offset per rank; every [offset, offset + count) inside its buffer.
void check_all_to_all_layout(const Communicator& comm, std::size_t send_bytes,
                             std::span<const std::size_t> send_counts, std::span<const std::size_t> send_offsets,
                             std::size_t recv_bytes, std::span<const std::size_t> recv_counts,
                             std::span<const std::size_t> recv_offsets);

}  // namespace lemma::dist
