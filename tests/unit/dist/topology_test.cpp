#include "lemma/dist/topology.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "lemma/base/error.h"

namespace lemma::dist {
namespace {

TEST(Topology, SyntheticTwoSocketMachineHasItsShape) {
  const Topology topology = discover_topology("pack:2 numa:2 core:4 pu:2");
  ASSERT_EQ(topology.packages.size(), 2u);
  ASSERT_EQ(topology.numa_nodes.size(), 4u);
  EXPECT_EQ(topology.num_cores(), 16);
  EXPECT_EQ(topology.num_hardware_threads(), 32);
  std::set<int> cpus;
  for (std::size_t n = 0; n < topology.numa_nodes.size(); ++n) {
    const NumaNode& node = topology.numa_nodes[n];
    EXPECT_EQ(node.cores.size(), 4u);
    EXPECT_EQ(node.package, static_cast<int>(n / 2)) << "node " << n;
    cpus.insert(node.cores.begin(), node.cores.end());
  }
  EXPECT_EQ(cpus.size(), 16u) << "each core is listed once, by its first hardware thread";
  EXPECT_EQ(topology.packages[0].numa_nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(topology.packages[1].numa_nodes, (std::vector<int>{2, 3}));
}

TEST(Topology, SyntheticCachesAreReported) {
  const Topology topology = discover_topology("pack:1 l3:1 numa:1 l2:4 core:1 pu:1");
  ASSERT_FALSE(topology.caches.empty());
  bool has_l2 = false;
  for (const CacheLevel& cache : topology.caches) {
    if (cache.level == 2) {
      has_l2 = true;
      EXPECT_EQ(cache.num_instances, 4);
    }
  }
  EXPECT_TRUE(has_l2);
}

TEST(Topology, ThisMachineHasCores) {
  const Topology topology = discover_topology();
  EXPECT_EQ(topology.source, "this machine");
  ASSERT_GE(topology.numa_nodes.size(), 1u);
  EXPECT_GE(topology.num_cores(), 1);
  EXPECT_GE(topology.num_hardware_threads(), topology.num_cores());
  const unsigned online = std::thread::hardware_concurrency();
  if (online > 0) EXPECT_LE(topology.num_hardware_threads(), static_cast<int>(online));
  for (const NumaNode& node : topology.numa_nodes) EXPECT_GT(node.memory_bytes, 0u);
}

TEST(Topology, BadSyntheticDescriptionIsNamed) {
  try {
    discover_topology("pack:two");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("pack:two"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace lemma::dist
