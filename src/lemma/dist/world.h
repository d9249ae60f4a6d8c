// The process's place among its peers: MPI initialised (only when launched by mpirun) and the world
// communicator, or, without mpirun, a single-rank world that never touches MPI (so `lemma` alone
// starts as fast as it did). One World per process, created and destroyed on the same thread; MPI
// cannot be initialised again after it is gone.
#pragma once

#include <memory>
#include <string>

#include "lemma/dist/communicator.h"
#include "lemma/dist/group_options.h"

namespace lemma::dist {

struct WorldOptions {
  // True when mpirun started this process. Nothing below the CLI reads the environment: the CLI
  // looks for mpirun's variables (OMPI_COMM_WORLD_SIZE, PMI_SIZE) and says so here.
  bool launched_by_mpirun = false;
  GroupOptions group = {};
};

class World {
 public:
  explicit World(WorldOptions options);
  // MPI_Finalize, except after a failed collective or while an exception unwinds: MPI_Finalize waits
  // for every rank, and a lost one never comes. The process then exits without it and mpirun ends
  // the job (a rank that exits non-zero aborts it).
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  Communicator& comm() { return *comm_; }
  // Collective: another group of all the world's ranks on the given transport (for comparing
  // backends: tests, `lemma bench collectives`). Without MPI, a single-rank group.
  std::unique_ptr<Communicator> make_group(Transport transport, const std::string& label);
  bool uses_mpi() const { return initialized_mpi_; }

 private:
  GroupOptions options_;
  bool initialized_mpi_ = false;
  std::unique_ptr<Communicator> comm_;
};

}  // namespace lemma::dist
