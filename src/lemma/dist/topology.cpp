#include "lemma/dist/topology.h"

#include <hwloc.h>

#include <memory>

#include "lemma/base/error.h"

namespace lemma::dist {
namespace {

struct TopologyHandle {
  hwloc_topology_t topology = nullptr;
  ~TopologyHandle() {
    if (topology != nullptr) hwloc_topology_destroy(topology);
  }
};

const char* io_kind(hwloc_obj_osdev_type_e type) {
  switch (type) {
    case HWLOC_OBJ_OSDEV_GPU: return "gpu";
    case HWLOC_OBJ_OSDEV_NETWORK: return "network";
    case HWLOC_OBJ_OSDEV_OPENFABRICS: return "openfabrics";
    case HWLOC_OBJ_OSDEV_COPROC: return "coprocessor";
    default: return nullptr;  // block devices, DMA engines: not part of placement
  }
}

// The NUMA node index (into `numa_objects`) whose cpuset is the first to intersect `cpuset`.
int numa_index_of(hwloc_const_cpuset_t cpuset, const std::vector<hwloc_obj_t>& numa_objects) {
  for (std::size_t i = 0; i < numa_objects.size(); ++i) {
    if (hwloc_bitmap_intersects(cpuset, numa_objects[i]->cpuset)) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

int Topology::num_cores() const {
  int total = 0;
  for (const NumaNode& node : numa_nodes) total += static_cast<int>(node.cores.size());
  return total;
}

int Topology::num_hardware_threads() const {
  int total = 0;
  for (const NumaNode& node : numa_nodes) total += node.num_hardware_threads;
  return total;
}

Topology discover_topology(const std::string& synthetic) {
  TopologyHandle handle;
  if (hwloc_topology_init(&handle.topology) != 0) fail_errno("hwloc_topology_init");
  if (synthetic.empty()) {
    hwloc_topology_set_io_types_filter(handle.topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  } else if (hwloc_topology_set_synthetic(handle.topology, synthetic.c_str()) != 0) {
    fail<InvalidArgument>("hwloc refused the synthetic topology '{}' (expected e.g. 'pack:2 numa:2 core:8 pu:2')",
                          synthetic);
  }
  if (hwloc_topology_load(handle.topology) != 0) fail_errno("hwloc_topology_load");
  hwloc_topology_t topo = handle.topology;

  Topology result;
  result.source = synthetic.empty() ? "this machine" : "synthetic: " + synthetic;

  std::vector<hwloc_obj_t> numa_objects;
  const int num_numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < num_numa; ++i) numa_objects.push_back(hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i));

  const int num_packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  for (int p = 0; p < std::max(num_packages, 1); ++p) {
    Package package;
    package.index = p;
    if (num_packages > 0) {
      hwloc_obj_t object = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, p);
      if (const char* model = hwloc_obj_get_info_by_name(object, "CPUModel")) package.cpu_model = model;
    }
    result.packages.push_back(package);
  }

  for (int i = 0; i < num_numa; ++i) {
    hwloc_obj_t object = numa_objects[static_cast<std::size_t>(i)];
    NumaNode node;
    node.os_index = static_cast<int>(object->os_index);
    node.memory_bytes = object->attr != nullptr ? object->attr->numanode.local_memory : 0;
    hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, object);
    node.package = package != nullptr ? static_cast<int>(package->logical_index) : 0;
    node.num_hardware_threads = hwloc_get_nbobjs_inside_cpuset_by_type(topo, object->cpuset, HWLOC_OBJ_PU);
    const int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, object->cpuset, HWLOC_OBJ_CORE);
    for (int c = 0; c < cores; ++c) {
      hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, object->cpuset, HWLOC_OBJ_CORE, c);
      node.cores.push_back(hwloc_bitmap_first(core->cpuset));
    }
    result.packages[static_cast<std::size_t>(node.package)].numa_nodes.push_back(i);
    result.numa_nodes.push_back(std::move(node));
  }

  for (hwloc_obj_type_t type : {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE}) {
    const int count = hwloc_get_nbobjs_by_type(topo, type);
    if (count <= 0) continue;
    hwloc_obj_t first = hwloc_get_obj_by_type(topo, type, 0);
    result.caches.push_back({static_cast<int>(first->attr->cache.depth), first->attr->cache.size, count});
  }

  for (hwloc_obj_t device = hwloc_get_next_osdev(topo, nullptr); device != nullptr;
       device = hwloc_get_next_osdev(topo, device)) {
    const char* kind = io_kind(device->attr->osdev.type);
    if (kind == nullptr) continue;
    hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo, device);
    const int numa = parent != nullptr ? numa_index_of(parent->cpuset, numa_objects) : -1;
    // A device whose nearest non-I/O ancestor is the whole machine has no locality.
    const bool local = parent != nullptr && parent->type != HWLOC_OBJ_MACHINE;
    result.io_devices.push_back({kind, device->name != nullptr ? device->name : "", local ? numa : -1});
  }
  return result;
}

}  // namespace lemma::dist
