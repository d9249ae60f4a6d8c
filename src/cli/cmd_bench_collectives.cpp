// `mpirun -np N lemma bench collectives [--sizes ...] [--json]`: latency and bandwidth of all-reduce,
// all-gather and broadcast by message size over the shared-memory backend (when every rank is on one
// host) and over MPI, as one table printed by rank 0. The timing lives in lemma/dist/collective_bench.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/dist_world.h"
#include "cli/machine_info.h"
#include "lemma/base/error.h"
#include "lemma/dist/collective_bench.h"

namespace lemma::cli {

namespace {

struct CollectivesFlags {
  DistFlags dist;
  std::vector<std::size_t> sizes = {4, 64, 1024, 3584, 16384, 65536, 262144, 1048576, 4194304, 16777216};
  bool json = false;
};

int run_collectives(const CollectivesFlags& flags) {
  auto world = open_world(flags.dist);
  const int ranks = world->comm().size();
  if (ranks < 2) {
    fail<InvalidArgument>("bench collectives: needs several ranks: run it as `mpirun -np 2 lemma bench collectives`");
  }
  dist::CollectiveBenchOptions options;
  options.bytes = flags.sizes;
  nlohmann::json rows = nlohmann::json::array();
  const bool printer = world->comm().rank() == 0;
  if (printer && !flags.json) {
    std::printf("collectives: %d ranks, %s\n", ranks, cpu_model_name().c_str());
    std::printf("%-11s %-4s %10s %6s %10s %10s %10s %10s\n", "op", "via", "bytes", "iters", "avg_us", "p50_us",
                "algbw_GB/s", "busbw_GB/s");
  }
  for (const dist::Transport transport : {dist::Transport::kShm, dist::Transport::kMpi}) {
    const char* via = dist::transport_name(transport);
    std::unique_ptr<dist::Communicator> comm;
    try {
      comm = world->make_group(transport, std::string("bench-") + via);
    } catch (const InvalidArgument& e) {  // shared memory across hosts: nothing to compare
      if (printer) std::fprintf(stderr, "bench collectives: no %s rows: %s\n", via, e.what());
      continue;
    }
    for (const auto& t : dist::time_collectives(*comm, options)) {
      rows.push_back({{"op", dist::bench_op_name(t.op)}, {"transport", via}, {"bytes", t.bytes},
                      {"iterations", t.iterations}, {"avg_us", t.avg_us}, {"p50_us", t.p50_us},
                      {"algbw_gbps", t.algbw_gbps}, {"busbw_gbps", t.busbw_gbps}});
      if (printer && !flags.json) {
        std::printf("%-11s %-4s %10zu %6d %10.2f %10.2f %10.3f %10.3f\n", dist::bench_op_name(t.op), via, t.bytes,
                    t.iterations, t.avg_us, t.p50_us, t.algbw_gbps, t.busbw_gbps);
        std::fflush(stdout);
      }
    }
  }
  if (printer && flags.json) {
    std::printf("%s\n", nlohmann::json{{"test", "collectives"}, {"ranks", ranks}, {"cpu", cpu_model_name()}, {"rows", rows}}
                            .dump(2)
                            .c_str());
  }
  return 0;
}

}  // namespace

void register_bench_collectives(CLI::App* bench) {
  auto flags = std::make_shared<CollectivesFlags>();
  auto* sub = bench->add_subcommand("collectives", "Under mpirun: collective latency and bandwidth, shared memory vs MPI");
  sub->add_option("--sizes", flags->sizes, "Message sizes in bytes (per rank)")->capture_default_str();
  sub->add_flag("--json", flags->json, "One JSON object (rank 0)");
  add_dist_options(sub, flags->dist);
  bind(sub, [flags] { return run_collectives(*flags); });
}

}  // namespace lemma::cli
