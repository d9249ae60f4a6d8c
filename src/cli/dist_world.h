// The CLI's side of multi-process runs: whether mpirun started this process (the only place that
// reads mpirun's environment) and the flags every distributed command shares, turned into the
// dist::WorldOptions the library takes.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "lemma/dist/world.h"

namespace lemma::cli {

// True when an MPI launcher started this process: OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE, MPICH's
// and Slurm's PMI launchers PMI_SIZE. Without one, lemma runs as one rank and never initialises MPI.
bool launched_by_mpirun();

struct DistFlags {
  double timeout_s = 60.0;          // a collective that hears nothing from a rank this long fails
  std::string transport = "auto";   // auto | mpi | shm
  std::string placement = "auto";   // auto: pin each rank to its NUMA node's cores (lemma topology) unless
                                    // the launcher bound it; none: leave affinity alone
};

void add_dist_options(CLI::App* app, DistFlags& flags);

// Validated options (InvalidArgument naming the flag otherwise).
dist::WorldOptions world_options(const DistFlags& flags);

// The process's World: MPI only under mpirun.
std::unique_ptr<dist::World> open_world(const DistFlags& flags);

}  // namespace lemma::cli
