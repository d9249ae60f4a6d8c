// `lemma topology`: this machine, a synthetic two-socket machine and the placement of N ranks.
#include <gtest/gtest.h>

#include "run_command.h"

namespace lemma::testing {
namespace {

TEST(TopologyCli, ThisMachine) {
  const CommandResult r = run_command(std::string(LEMMA_BINARY) + " topology");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("topology: this machine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NUMA node 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 0:"), std::string::npos) << r.out;
}

TEST(TopologyCli, SyntheticTwoSocketsFourRanks) {
  const CommandResult r =
      run_command(std::string(LEMMA_BINARY) + " topology --synthetic 'pack:2 numa:1 core:4 pu:2' --ranks 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 package(s), 2 NUMA node(s), 8 cores, 16 hardware threads"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 3: NUMA node 1, 2 thread(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("slowest link: across sockets"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mpirun -np 4"), std::string::npos) << r.out;
}

TEST(TopologyCli, BadDescriptionIsAnError) {
  const CommandResult r = run_command(std::string(LEMMA_BINARY) + " topology --synthetic 'pack:x'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("pack:x"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lemma::testing
