#include "lemma/dist/placement.h"

#include <sched.h>

#include <algorithm>

#include "lemma/base/error.h"

namespace lemma::dist {

int PlacementPlan::threads_for(int rank) const {
  for (const RankPlacement& placement : ranks) {
    if (placement.rank == rank) return std::max<int>(1, static_cast<int>(placement.cpus.size()));
  }
  fail<InvalidArgument>("rank {} is not in the placement plan of {} ranks", rank, ranks.size());
}

PlacementPlan plan_placement(const Topology& topology, int num_ranks) {
  const int num_nodes = static_cast<int>(topology.numa_nodes.size());
  if (num_ranks < 0) fail<InvalidArgument>("number of ranks must be >= 0, got {}", num_ranks);
  if (num_nodes == 0 || topology.num_cores() == 0) {
    fail<InvalidArgument>("topology ({}) has no NUMA node with cores to place ranks on", topology.source);
  }
  if (num_ranks == 0) num_ranks = num_nodes;

  PlacementPlan plan;
  if (num_ranks <= num_nodes) {
    // Whole nodes per rank, contiguous, so a rank's nodes are as close to each other as possible.
    plan.rule = num_ranks == num_nodes ? "one rank per NUMA node" : "whole NUMA nodes per rank (fewer ranks than nodes)";
    for (int r = 0; r < num_ranks; ++r) {
      RankPlacement placement;
      placement.rank = r;
      for (int n = r * num_nodes / num_ranks; n < (r + 1) * num_nodes / num_ranks; ++n) {
        placement.numa_nodes.push_back(n);
        const auto& cores = topology.numa_nodes[static_cast<std::size_t>(n)].cores;
        placement.cpus.insert(placement.cpus.end(), cores.begin(), cores.end());
      }
      plan.ranks.push_back(std::move(placement));
    }
    return plan;
  }

  // More ranks than nodes: node n hosts num_ranks / num_nodes ranks (the first num_ranks % num_nodes
  // one more), each taking a contiguous share of the node's cores.
  plan.rule = "NUMA nodes split between ranks (more ranks than nodes)";
  int rank = 0;
  for (int n = 0; n < num_nodes; ++n) {
    const auto& cores = topology.numa_nodes[static_cast<std::size_t>(n)].cores;
    const int ranks_here = num_ranks / num_nodes + (n < num_ranks % num_nodes ? 1 : 0);
    const int num_cores = static_cast<int>(cores.size());
    if (ranks_here > num_cores) plan.oversubscribed = true;
    for (int i = 0; i < ranks_here; ++i, ++rank) {
      RankPlacement placement;
      placement.rank = rank;
      placement.numa_nodes.push_back(n);
      if (num_cores == 0) {
        // A memory-only node (CXL, HBM without cores): its ranks run on any core; flagged.
        plan.oversubscribed = true;
      } else if (ranks_here > num_cores) {
        placement.cpus.push_back(cores[static_cast<std::size_t>(i % num_cores)]);
      } else {
        for (int c = i * num_cores / ranks_here; c < (i + 1) * num_cores / ranks_here; ++c) {
          placement.cpus.push_back(cores[static_cast<std::size_t>(c)]);
        }
      }
      plan.ranks.push_back(std::move(placement));
    }
  }
  return plan;
}

bool process_may_run_anywhere(const Topology& topology) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  return CPU_COUNT(&allowed) >= topology.num_hardware_threads();
}

bool pin_process(const RankPlacement& placement) {
  if (placement.cpus.empty()) return false;
  cpu_set_t wanted;
  CPU_ZERO(&wanted);
  for (int cpu : placement.cpus)
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &wanted);
  return sched_setaffinity(0, sizeof(wanted), &wanted) == 0;
}

}  // namespace lemma::dist
