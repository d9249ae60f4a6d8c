#include "lemma/dist/world.h"

#include <exception>

#include "lemma/dist/group_factory.h"
#include "lemma/dist/mpi_handle.h"
#include "lemma/dist/self_communicator.h"

namespace lemma::dist {

World::World(WorldOptions options) : options_(std::move(options.group)) {
  if (!options.launched_by_mpirun) {
    comm_ = std::make_unique<SelfCommunicator>("world");
    return;
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) fail<InvalidArgument>("dist: MPI is already initialised: one World per process");
  int provided = 0;
  // SERIALIZED: the engine may run its collectives on a thread other than main, one at a time.
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "dist: MPI_Init_thread");
  initialized_mpi_ = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    fail<Unsupported>("dist: this MPI library offers thread level {}, lemma needs MPI_THREAD_SERIALIZED", provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  comm_ = make_group_communicator(make_mpi_communicator(MPI_COMM_WORLD, "world", options_));
}

std::unique_ptr<Communicator> World::make_group(Transport transport, const std::string& label) {
  if (!initialized_mpi_) return std::make_unique<SelfCommunicator>(label);
  GroupOptions options = options_;
  options.transport = transport;
  return make_group_communicator(make_mpi_communicator(MPI_COMM_WORLD, label, std::move(options)));
}

World::~World() {
  if (!initialized_mpi_) return;
  if (options_.world_failed->load() || std::uncaught_exceptions() > 0) {
    // Freeing the world's groups may wait on the lost rank too (a shared window's free is a
    // barrier): leave them to the process's exit.
    (void)comm_.release();
    return;
  }
  comm_.reset();
  MPI_Finalize();
}

}  // namespace lemma::dist
