#include "cli/dist_world.h"

#include <chrono>
#include <cstdlib>

#include "lemma/base/error.h"

namespace lemma::cli {

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

void add_dist_options(CLI::App* app, DistFlags& flags) {
  app->add_option("--dist-timeout", flags.timeout_s,
                  "Seconds a collective waits for a rank before failing with an error naming it (under mpirun)")
      ->capture_default_str();
  app->add_option("--dist-transport", flags.transport,
                  "Collectives over shared memory (ranks on one host), MPI, or auto (shm when all ranks share a host)")
      ->check(CLI::IsMember({"auto", "mpi", "shm"}))
      ->capture_default_str();
}

dist::WorldOptions world_options(const DistFlags& flags) {
  if (!(flags.timeout_s > 0.0)) fail<InvalidArgument>("--dist-timeout must be > 0 seconds, got {}", flags.timeout_s);
  dist::WorldOptions options;
  options.launched_by_mpirun = launched_by_mpirun();
  options.group.timeout = std::chrono::milliseconds(static_cast<long long>(flags.timeout_s * 1000.0));
  options.group.transport = flags.transport == "mpi"   ? dist::Transport::kMpi
                            : flags.transport == "shm" ? dist::Transport::kShm
                                                       : dist::Transport::kAuto;
  return options;
}

std::unique_ptr<dist::World> open_world(const DistFlags& flags) {
  return std::make_unique<dist::World>(world_options(flags));
}

}  // namespace lemma::cli
