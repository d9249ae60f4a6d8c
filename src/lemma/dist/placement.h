// Where each rank runs: the rule is one rank per NUMA node (its memory local, its threads pinned to
// that node's cores); more ranks than nodes split a node's cores, fewer ranks take whole nodes each.
// Pure function of a Topology, so it is tested on synthetic machines.
#pragma once

#include <string>
#include <vector>

#include "lemma/dist/topology.h"

namespace lemma::dist {

struct RankPlacement {
  int rank = 0;
  std::vector<int> numa_nodes;  // indices into Topology::numa_nodes (one, unless ranks < nodes)
  std::vector<int> cpus;        // OS processor numbers to pin this rank's threads to, one per core
};

struct PlacementPlan {
  std::vector<RankPlacement> ranks;
  bool oversubscribed = false;  // more ranks than cores: cores are shared round-robin
  std::string rule = {};        // one line saying which rule applied

  // The threads each rank should run (its cores; at least 1).
  int threads_for(int rank) const;
};

// `num_ranks` 0 means one rank per NUMA node. Throws InvalidArgument for a negative count or a
// topology without cores.
PlacementPlan plan_placement(const Topology& topology, int num_ranks = 0);

// Applying a placement to this process (its threads, including those started later, inherit it).
// True when the process may run on every hardware thread of `topology` (no launcher bound it).
bool process_may_run_anywhere(const Topology& topology);
// Restricts the process to `placement`'s cpus; false (nothing changed) when it has none or the
// operating system refuses.
bool pin_process(const RankPlacement& placement);

}  // namespace lemma::dist
