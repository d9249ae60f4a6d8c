#include "lemma/dist/group_factory.h"

#include "lemma/dist/mpi_handle.h"
#include "lemma/dist/shm_communicator.h"

namespace lemma::dist {

const char* transport_name(Transport transport) {
  switch (transport) {
    case Transport::kAuto: return "auto";
    case Transport::kMpi: return "mpi";
    case Transport::kShm: return "shm";
  }
  return "?";
}

bool is_single_host(const MpiCommunicator& mpi) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(mpi.handle().collectives, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
            "dist: MPI_Comm_split_type(SHARED)");
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  return node_size == mpi.size();
}

std::unique_ptr<Communicator> make_group_communicator(std::unique_ptr<MpiCommunicator> mpi) {
  switch (mpi->options().transport) {
    case Transport::kMpi:
      return mpi;
    case Transport::kShm:
      if (!is_single_host(*mpi)) {
        fail<InvalidArgument>("dist: group '{}' spans several hosts; shared-memory transport needs them on one",
                              mpi->label());
      }
      return std::make_unique<ShmCommunicator>(std::move(mpi));
    case Transport::kAuto:
      // One rank has nothing to share; several on one host skip MPI's per-message latency.
      if (mpi->size() > 1 && is_single_host(*mpi)) return std::make_unique<ShmCommunicator>(std::move(mpi));
      return mpi;
  }
  return mpi;
}

}  // namespace lemma::dist
