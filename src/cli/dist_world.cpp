#include "cli/dist_world.h"

#include <chrono>
#include <cstdlib>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/dist/placement.h"

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
  app->add_option("--placement", flags.placement,
                  "Under mpirun: auto pins each rank's threads to its share of the host (one rank per NUMA node, "
                  "see `lemma topology`) unless the launcher bound it already (use mpirun --bind-to none); none "
                  "leaves affinity alone")
      ->check(CLI::IsMember({"auto", "none"}))
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

namespace {

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : fallback;
}

// G19: this host's ranks placed as `lemma topology` would place them (the launcher's local rank and
// count name this process's share), before any worker thread starts.
void place_rank(const DistFlags& flags) {
  if (flags.placement != "auto" || !launched_by_mpirun()) return;
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("MPI_LOCALRANKID", -1));
  const int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("MPI_LOCALNRANKS", -1));
  if (local_rank < 0 || local_size < 1) return;
  const dist::Topology topology = dist::discover_topology();
  if (!dist::process_may_run_anywhere(topology)) {
    log().info("rank {} on this host: the launcher bound it; its affinity is kept", local_rank);
    return;
  }
  const dist::PlacementPlan plan = dist::plan_placement(topology, local_size);
  const dist::RankPlacement& mine = plan.ranks.at(static_cast<std::size_t>(local_rank));
  if (dist::pin_process(mine)) {
    log().info("rank {} on this host pinned to {} cpu(s) of NUMA node {} ({})", local_rank, mine.cpus.size(),
               mine.numa_nodes.empty() ? -1 : mine.numa_nodes.front(), plan.rule);
  }
}

}  // namespace

std::unique_ptr<dist::World> open_world(const DistFlags& flags) {
  auto world = std::make_unique<dist::World>(world_options(flags));
  place_rank(flags);
  return world;
}

}  // namespace lemma::cli
