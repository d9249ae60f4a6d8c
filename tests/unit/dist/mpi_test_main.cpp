// main() of the tests that run under `mpirun -np N`: one World for the whole process (MPI is
// initialised once), its transport from `--transport=mpi|shm|auto`. Rank 0 prints the usual report;
// the other ranks print only failures.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "unit/dist/mpi_test_world.h"

namespace lemma::dist::testing {

World* g_world = nullptr;
Transport g_transport = Transport::kAuto;

World& test_world() { return *g_world; }
Transport test_transport() { return g_transport; }

}  // namespace lemma::dist::testing

int main(int argc, char** argv) {
  using lemma::dist::Transport;
  using lemma::dist::World;
  using lemma::dist::WorldOptions;
  namespace testing = lemma::dist::testing;
  // Decided before InitGoogleTest, which picks the result printer: the rank comes from mpirun's
  // environment, as MPI is not initialised yet.
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank != nullptr && std::string(rank) != "0") GTEST_FLAG_SET(brief, true);
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--transport=mpi") testing::g_transport = Transport::kMpi;
    if (arg == "--transport=shm") testing::g_transport = Transport::kShm;
  }
  WorldOptions options;
  // A test may read mpirun's environment; the library never does.
  options.launched_by_mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
  options.group.transport = testing::g_transport;
  options.group.timeout = std::chrono::seconds(20);
  // Small slots, so that the tests' "large" sizes pass through the shared segment in several pieces.
  options.group.shm_slot_bytes = 64 * 1024;
  auto world = std::make_unique<World>(options);
  testing::g_world = world.get();
  const int failed = RUN_ALL_TESTS();
  world.reset();
  return failed;
}
