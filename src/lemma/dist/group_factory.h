// The topology rule: which backend a group of MPI ranks runs its collectives on. Shared memory when
// every rank of the group is on this host (MPI_Comm_split_type SHARED covers the whole group) and the
// options allow it, MPI otherwise. Used for the world and for every group split from it.
#pragma once

#include <memory>

#include "lemma/dist/communicator.h"
#include "lemma/dist/mpi_communicator.h"

namespace lemma::dist {

// Collective over `mpi`'s group. Transport::kShm on a group that spans hosts is an InvalidArgument.
std::unique_ptr<Communicator> make_group_communicator(std::unique_ptr<MpiCommunicator> mpi);

// Collective: true when every rank of the group shares this host's memory.
bool is_single_host(const MpiCommunicator& mpi);

}  // namespace lemma::dist
