// `lemma topology`: the machine as hwloc sees it (packages, NUMA nodes, cores, caches, GPUs and NICs),
// where lemma would place N ranks (one per NUMA node by default, threads pinned inside), the slowest
// link they cross and what the cost model predicts for a layer's all-reduce on it.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "lemma/dist/collective_cost.h"
#include "lemma/dist/placement.h"
#include "lemma/dist/topology.h"

namespace lemma::cli {
namespace {

struct TopologyOptions {
  std::string synthetic;
  int ranks = 0;
  int hidden_size = 4096;
};

std::string cpu_list(const std::vector<int>& cpus) {
  // Runs of consecutive numbers as a-b, as taskset and mpirun's --cpu-set take them.
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += fmt::format("{}{}", out.empty() ? "" : ",", i == j ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1ull << 20));
  return fmt::format("{} KiB", bytes >> 10);
}

void print_machine(const dist::Topology& topology) {
  std::printf("topology: %s\n", topology.source.c_str());
  std::printf("  %zu package(s), %zu NUMA node(s), %d cores, %d hardware threads\n", topology.packages.size(),
              topology.numa_nodes.size(), topology.num_cores(), topology.num_hardware_threads());
  for (const dist::Package& package : topology.packages) {
    std::printf("  package %d%s\n", package.index,
                package.cpu_model.empty() ? "" : fmt::format(": {}", package.cpu_model).c_str());
    for (int n : package.numa_nodes) {
      const dist::NumaNode& node = topology.numa_nodes[static_cast<std::size_t>(n)];
      std::printf("    NUMA node %d (os %d): %s, %zu cores (cpus %s), %d hardware threads\n", n, node.os_index,
                  human_bytes(node.memory_bytes).c_str(), node.cores.size(), cpu_list(node.cores).c_str(),
                  node.num_hardware_threads);
    }
  }
  for (const dist::CacheLevel& cache : topology.caches) {
    std::printf("  L%d cache: %d x %s\n", cache.level, cache.num_instances, human_bytes(cache.bytes).c_str());
  }
  if (topology.io_devices.empty()) std::printf("  GPUs / network devices: none found\n");
  for (const dist::IoDevice& device : topology.io_devices) {
    std::printf("  %s %s: %s\n", device.kind.c_str(), device.name.c_str(),
                device.numa_node < 0 ? "no NUMA locality" : fmt::format("near NUMA node {}", device.numa_node).c_str());
  }
}

void print_placement(const dist::Topology& topology, const dist::PlacementPlan& plan, int hidden_size) {
  std::printf("placement of %zu rank(s): %s%s\n", plan.ranks.size(), plan.rule.c_str(),
              plan.oversubscribed ? " (oversubscribed: more ranks than cores)" : "");
  for (const dist::RankPlacement& rank : plan.ranks) {
    std::string nodes;
    for (int n : rank.numa_nodes) nodes += fmt::format("{}{}", nodes.empty() ? "" : ",", n);
    std::printf("  rank %d: NUMA node %s, %d thread(s) pinned to cpus %s\n", rank.rank, nodes.c_str(),
                plan.threads_for(rank.rank), rank.cpus.empty() ? "(any)" : cpu_list(rank.cpus).c_str());
  }
  const dist::LinkKind link_kind = dist::slowest_link(topology, plan);
  const dist::LinkCost link = dist::default_link_cost(link_kind);
  const int num_ranks = static_cast<int>(plan.ranks.size());
  std::printf("slowest link: %s (model: %.1f us latency, %.1f GB/s; defaults until `lemma bench collectives` "
              "measures this machine)\n",
              std::string(dist::link_kind_name(link_kind)).c_str(), link.latency_s * 1e6, link.bytes_per_s / 1e9);
  // A tensor-parallel layer all-reduces one f32 row of hidden_size per token, twice per layer.
  for (int tokens : {1, 32, 512}) {
    const std::size_t bytes = static_cast<std::size_t>(tokens) * static_cast<std::size_t>(hidden_size) * sizeof(float);
    std::printf("  all-reduce of %d token(s) x %d f32: %.1f us predicted\n", tokens, hidden_size,
                dist::collective_seconds(dist::Collective::kAllReduce, bytes, num_ranks, link) * 1e6);
  }
  std::printf("launch: mpirun -np %d --map-by ppr:%d:numa --bind-to none lemma ...  (lemma pins its threads)\n",
              num_ranks, std::max(1, num_ranks / std::max<int>(1, static_cast<int>(topology.numa_nodes.size()))));
}

}  // namespace

void register_topology(CLI::App& app) {
  auto opts = std::make_shared<TopologyOptions>();
  auto* sub = app.add_subcommand("topology", "Show the machine's packages, NUMA nodes, caches and devices, and the rank placement lemma would use");
  sub->add_option("--ranks", opts->ranks, "Ranks to place (default: one per NUMA node)")->check(CLI::NonNegativeNumber);
  sub->add_option("--synthetic", opts->synthetic,
                  "Plan for a described machine instead of this one (hwloc synthetic, e.g. 'pack:2 numa:2 core:16 pu:2')");
  sub->add_option("--hidden-size", opts->hidden_size, "Hidden size for the all-reduce predictions")
      ->check(CLI::PositiveNumber);
  bind(sub, [opts] {
    const dist::Topology topology = dist::discover_topology(opts->synthetic);
    print_machine(topology);
    print_placement(topology, dist::plan_placement(topology, opts->ranks), opts->hidden_size);
    return 0;
  });
}

}  // namespace lemma::cli
