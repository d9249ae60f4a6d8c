// The machine as lemma places ranks on it: packages (sockets) holding NUMA nodes holding cores, the
// cache sizes, and the GPUs and network devices hwloc sees. Plain data; `discover_topology` fills it
// from hwloc (the real machine, or a synthetic description for tests and what-if planning).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemma::dist {

struct CacheLevel {
  int level = 0;                // 1, 2, 3
  std::uint64_t bytes = 0;      // size of one instance
  int num_instances = 0;        // how many of them the machine has
};

struct NumaNode {
  int os_index = 0;
  int package = 0;              // index into Topology::packages
  std::uint64_t memory_bytes = 0;
  std::vector<int> cores;       // one OS processor number per physical core (its first hardware thread)
  int num_hardware_threads = 0;
};

struct Package {
  int index = 0;
  std::string cpu_model = {};   // empty when hwloc does not know it (synthetic topologies)
  std::vector<int> numa_nodes;  // indices into Topology::numa_nodes
};

struct IoDevice {
  std::string kind = {};        // "gpu", "network", "coprocessor", "openfabrics"
  std::string name = {};        // the OS name: eth0, card0, mlx5_0, ...
  int numa_node = -1;           // index into Topology::numa_nodes of the nearest node, -1 unknown
};

struct Topology {
  std::string source = {};      // "this machine" or "synthetic: <description>"
  std::vector<Package> packages;
  std::vector<NumaNode> numa_nodes;
  std::vector<CacheLevel> caches;  // data/unified caches, L1 first
  std::vector<IoDevice> io_devices;

  int num_cores() const;
  int num_hardware_threads() const;
};

// Reads the topology with hwloc. `synthetic` empty: this machine (with its PCI GPUs and NICs);
// otherwise an hwloc synthetic description such as "pack:2 numa:2 core:8 pu:2". Throws
// InvalidArgument naming the description when hwloc refuses it.
Topology discover_topology(const std::string& synthetic = {});

}  // namespace lemma::dist
