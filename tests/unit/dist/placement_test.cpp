#include "lemma/dist/placement.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <set>

#include "lemma/base/error.h"

namespace lemma::dist {
namespace {

// Each rank's cpus are disjoint from every other rank's, and lie in the rank's own NUMA nodes.
void expect_disjoint_and_local(const Topology& topology, const PlacementPlan& plan) {
  std::set<int> seen;
  for (const RankPlacement& rank : plan.ranks) {
    std::set<int> local;
    for (int node : rank.numa_nodes) {
      const auto& cores = topology.numa_nodes[static_cast<std::size_t>(node)].cores;
      local.insert(cores.begin(), cores.end());
    }
    for (int cpu : rank.cpus) {
      EXPECT_TRUE(seen.insert(cpu).second) << "cpu " << cpu << " given twice";
      EXPECT_TRUE(local.count(cpu)) << "cpu " << cpu << " of rank " << rank.rank << " is not in its nodes";
    }
  }
}

TEST(Placement, DefaultIsOneRankPerNumaNode) {
  const Topology topology = discover_topology("pack:2 numa:2 core:4 pu:2");
  const PlacementPlan plan = plan_placement(topology);
  ASSERT_EQ(plan.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(plan.ranks[r].numa_nodes, (std::vector<int>{r}));
    EXPECT_EQ(plan.threads_for(r), 4);
  }
  EXPECT_FALSE(plan.oversubscribed);
  expect_disjoint_and_local(topology, plan);
}

TEST(Placement, MoreRanksSplitANodesCores) {
  const Topology topology = discover_topology("pack:2 numa:2 core:4 pu:2");
  const PlacementPlan plan = plan_placement(topology, 8);
  ASSERT_EQ(plan.ranks.size(), 8u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(plan.ranks[r].numa_nodes, (std::vector<int>{r / 2}));
    EXPECT_EQ(plan.threads_for(r), 2);
  }
  expect_disjoint_and_local(topology, plan);

  const PlacementPlan uneven = plan_placement(topology, 6);  // nodes 0 and 1 take 2 ranks, 2 and 3 one
  ASSERT_EQ(uneven.ranks.size(), 6u);
  EXPECT_EQ(uneven.threads_for(0), 2);
  EXPECT_EQ(uneven.threads_for(4), 4);
  expect_disjoint_and_local(topology, uneven);
}

TEST(Placement, FewerRanksTakeWholeNodesOfOneSocket) {
  const Topology topology = discover_topology("pack:2 numa:2 core:4 pu:2");
  const PlacementPlan plan = plan_placement(topology, 2);
  ASSERT_EQ(plan.ranks.size(), 2u);
  EXPECT_EQ(plan.ranks[0].numa_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.ranks[1].numa_nodes, (std::vector<int>{2, 3}));
  EXPECT_EQ(plan.threads_for(1), 8);
  expect_disjoint_and_local(topology, plan);
}

TEST(Placement, MoreRanksThanCoresIsOversubscribed) {
  const Topology topology = discover_topology("pack:1 numa:1 core:2 pu:1");
  const PlacementPlan plan = plan_placement(topology, 4);
  ASSERT_EQ(plan.ranks.size(), 4u);
  EXPECT_TRUE(plan.oversubscribed);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(plan.threads_for(r), 1);
}

TEST(Placement, BadCountsAreRefused) {
  const Topology topology = discover_topology("pack:1 numa:1 core:2 pu:1");
  EXPECT_THROW(plan_placement(topology, -1), InvalidArgument);
  const PlacementPlan plan = plan_placement(topology, 1);
  EXPECT_THROW(plan.threads_for(3), InvalidArgument);
}

TEST(Placement, PinningRestrictsThisProcess) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  const Topology topology = discover_topology();
  const bool anywhere = process_may_run_anywhere(topology);
  EXPECT_EQ(anywhere, CPU_COUNT(&saved) >= topology.num_hardware_threads());
  RankPlacement one;
  one.cpus = {topology.numa_nodes.at(0).cores.at(0)};
  ASSERT_TRUE(pin_process(one));
  cpu_set_t now;
  ASSERT_EQ(sched_getaffinity(0, sizeof(now), &now), 0);
  EXPECT_EQ(CPU_COUNT(&now), 1);
  EXPECT_TRUE(CPU_ISSET(one.cpus[0], &now));
  if (topology.num_hardware_threads() > 1) EXPECT_FALSE(process_may_run_anywhere(topology));
  EXPECT_FALSE(pin_process(RankPlacement{})) << "no cpus: nothing changed";
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

}  // namespace
}  // namespace lemma::dist
