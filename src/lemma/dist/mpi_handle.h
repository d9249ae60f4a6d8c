// Private to dist/: the MPI objects behind an MpiCommunicator. Only dist's .cpp files include
// <mpi.h>, so nothing above dist/ needs MPI's headers.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "lemma/dist/mpi_communicator.h"
#include "lemma/dist/peer_process.h"

namespace lemma::dist {

struct MpiCommunicator::Handle {
  // Two duplicates of one group: collectives tag their messages with a running sequence number on
  // the first; the user's send/recv tags live on the second and can never match a collective's.
  MPI_Comm collectives = MPI_COMM_NULL;
  MPI_Comm point_to_point = MPI_COMM_NULL;
  std::vector<int> world_ranks = {};  // group rank -> MPI_COMM_WORLD rank, for messages
  std::shared_ptr<const std::vector<PeerProcess>> world_processes = {};  // by world rank
};

// Takes ownership of `comm` (duplicates it twice, frees it). Collective over `comm`; without
// `world_processes` (a group split from another passes its parent's), also collective over the
// world, which it asks for every rank's host and pid.
std::unique_ptr<MpiCommunicator> make_mpi_communicator(
    MPI_Comm comm, std::string label, GroupOptions options,
    std::shared_ptr<const std::vector<PeerProcess>> world_processes = nullptr);

// Throws DistError "<what>: <MPI's error string>" unless rc is MPI_SUCCESS.
void check_mpi(int rc, const std::string& what);

}  // namespace lemma::dist
