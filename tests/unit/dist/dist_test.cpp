// The parts of dist/ that need no second process: the rank-order reduction, the single-rank world
// (what `lemma` runs on without mpirun) and the parallel layout's validation and coordinates.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "lemma/dist/parallel_config.h"
#include "lemma/dist/peer_process.h"
#include "lemma/dist/reduce.h"
#include "lemma/dist/self_communicator.h"
#include "lemma/dist/world.h"
#include "unit/dist/test_values.h"

namespace lemma::dist {
namespace {

using testing::reference_reduce;
using testing::test_vector;

TEST(ReduceInRankOrder, EqualsTheSerialReferenceBitForBit) {
  for (std::size_t n : {0u, 1u, 7u, 511u, 512u, 513u, 5000u}) {
    std::vector<std::vector<float>> inputs;
    std::vector<const float*> sources;
    for (int r = 0; r < 5; ++r) inputs.push_back(test_vector(r, n));
    for (auto& v : inputs) sources.push_back(v.data());
    for (bool max : {false, true}) {
      std::vector<float> out(n, -1.0f);
      reduce_in_rank_order(out, sources, max ? ReduceOp::kMax : ReduceOp::kSum);
      const auto want = reference_reduce({0, 1, 2, 3, 4}, n, max);
      EXPECT_EQ(0, std::memcmp(out.data(), want.data(), n * sizeof(float))) << "n=" << n << " max=" << max;
    }
  }
}

TEST(ReduceInRankOrder, OrderMattersForTheseValues) {
  // The fixture's point: another order gives other bits, so the tests above would catch one.
  const std::size_t n = 1000;
  const auto forward = reference_reduce({0, 1, 2, 3}, n, false);
  const auto backward = reference_reduce({3, 2, 1, 0}, n, false);
  EXPECT_NE(0, std::memcmp(forward.data(), backward.data(), n * sizeof(float)));
}

TEST(ReduceInRankOrder, OutputMayAliasASource) {
  const std::size_t n = 1500;
  auto a = test_vector(0, n), b = test_vector(1, n);
  const float* sources[] = {a.data(), b.data()};
  reduce_in_rank_order(b, sources, ReduceOp::kSum);
  const auto want = reference_reduce({0, 1}, n, false);
  EXPECT_EQ(0, std::memcmp(b.data(), want.data(), n * sizeof(float)));
}

TEST(SelfCommunicator, CollectivesOfOneRankAreCopies) {
  SelfCommunicator comm("tp");
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  std::vector<float> data = {1.5f, -2.0f};
  comm.all_reduce(data, ReduceOp::kSum);
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f}));
  std::vector<float> gathered(2);
  comm.all_gather(data, gathered);
  EXPECT_EQ(gathered, data);
  std::vector<float> out(2);
  comm.reduce_scatter(data, out);
  EXPECT_EQ(out, data);
  std::vector<std::byte> bytes(3, std::byte{7});
  comm.broadcast(bytes, 0);
  EXPECT_THROW(comm.broadcast(bytes, 1), InvalidArgument);
  std::vector<float> wrong(3);
  EXPECT_THROW(comm.all_gather(data, wrong), InvalidArgument);
  EXPECT_THROW(comm.send(bytes, 0, 0), DistError);
  auto sub = comm.split(0, 0, "pp");
  EXPECT_EQ(sub->size(), 1);
  EXPECT_NE(sub->name().find("pp"), std::string::npos);
}

TEST(World, WithoutMpirunIsOneRankAndNeedsNoMpi) {
  World world(WorldOptions{});
  EXPECT_FALSE(world.uses_mpi());
  EXPECT_EQ(world.comm().size(), 1);
  auto groups = make_process_groups(world.comm(), ParallelConfig{});
  EXPECT_EQ(groups.tp->size(), 1);
  EXPECT_EQ(groups.dp->size(), 1);
}

TEST(ParallelConfig, ProductMustMatchTheWorld) {
  EXPECT_NO_THROW(validate({2, 2, 1, 1}, 4));
  try {
    validate({2, 1, 1, 1}, 4);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("2 x 1 x 1 x 1 = 2 ranks, but the world has 4"), std::string::npos) << e.what();
  }
  try {
    validate({0, 1, 1, 1}, 1);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-parallel size 0"), std::string::npos) << e.what();
  }
}

TEST(ParallelConfig, TensorParallelRanksAreConsecutive) {
  const ParallelConfig config{2, 2, 1, 2};  // 8 ranks
  std::vector<int> seen(8, 0);
  for (int r = 0; r < 8; ++r) {
    const auto c = coordinates_of(config, r);
    EXPECT_EQ(c.tp, r % 2);
    EXPECT_EQ(c.dp, (r / 2) % 2);
    EXPECT_EQ(c.pp, r / 4);
    EXPECT_EQ(c.ep, 0);
    ++seen[static_cast<std::size_t>(((c.pp * 2 + c.dp) * 1 + c.ep) * 2 + c.tp)];
  }
  for (int count : seen) EXPECT_EQ(count, 1);  // the coordinates are a bijection
}

TEST(PeerProcess, TellsAnExitedProcessFromALiveOne) {
  const PeerProcess me = this_process();
  EXPECT_EQ(peer_state(me), PeerState::kAlive);
  // A child that exits and is not yet reaped is a zombie: as gone as a reaped one.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  PeerProcess peer = {me.host, static_cast<long>(child)};
  for (int i = 0; i < 200 && peer_state(peer) != PeerState::kExited; ++i) usleep(5000);
  EXPECT_EQ(peer_state(peer), PeerState::kExited) << "zombie child";
  waitpid(child, nullptr, 0);
  EXPECT_EQ(peer_state(peer), PeerState::kExited) << "reaped child";
  EXPECT_EQ(peer_state({me.host + "-elsewhere", me.pid}), PeerState::kUnknown);
}

}  // namespace
}  // namespace lemma::dist
