#include "lemma/dist/collective_cost.h"

#include <algorithm>
#include <cmath>

#include "lemma/base/error.h"

namespace lemma::dist {
namespace {

int ceil_log2(int n) {
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  return steps;
}

}  // namespace

std::string_view link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::kSameNuma: return "same NUMA node";
    case LinkKind::kSamePackage: return "across NUMA nodes";
    case LinkKind::kCrossPackage: return "across sockets";
    case LinkKind::kCrossHost: return "across hosts";
  }
  return "?";
}

LinkCost default_link_cost(LinkKind kind) {
  // Typical shared-memory copies run at a few GB/s per core pair with sub-microsecond handshakes;
  // a socket interconnect roughly halves bandwidth; TCP between hosts is tens of microseconds.
  switch (kind) {
    case LinkKind::kSameNuma: return {0.5e-6, 8e9};
    case LinkKind::kSamePackage: return {0.8e-6, 6e9};
    case LinkKind::kCrossPackage: return {1.5e-6, 4e9};
    case LinkKind::kCrossHost: return {30e-6, 1e9};
  }
  return {};
}

LinkKind link_between(const Topology& topology, const PlacementPlan& plan, int rank_a, int rank_b) {
  auto nodes_of = [&](int rank) -> const std::vector<int>& {
    for (const RankPlacement& placement : plan.ranks) {
      if (placement.rank == rank) return placement.numa_nodes;
    }
    fail<InvalidArgument>("rank {} is not in the placement plan of {} ranks", rank, plan.ranks.size());
  };
  LinkKind worst = LinkKind::kSameNuma;
  for (int a : nodes_of(rank_a)) {
    for (int b : nodes_of(rank_b)) {
      LinkKind kind = LinkKind::kSameNuma;
      if (a != b) {
        const int package_a = topology.numa_nodes[static_cast<std::size_t>(a)].package;
        const int package_b = topology.numa_nodes[static_cast<std::size_t>(b)].package;
        kind = package_a == package_b ? LinkKind::kSamePackage : LinkKind::kCrossPackage;
      }
      worst = std::max(worst, kind);
    }
  }
  return worst;
}

LinkKind slowest_link(const Topology& topology, const PlacementPlan& plan) {
  LinkKind worst = LinkKind::kSameNuma;
  for (const RankPlacement& a : plan.ranks) {
    for (const RankPlacement& b : plan.ranks) worst = std::max(worst, link_between(topology, plan, a.rank, b.rank));
  }
  return worst;
}

std::string_view collective_name(Collective collective) {
  switch (collective) {
    case Collective::kSendRecv: return "send/recv";
    case Collective::kAllReduce: return "all-reduce";
    case Collective::kAllGather: return "all-gather";
    case Collective::kReduceScatter: return "reduce-scatter";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kAllToAll: return "all-to-all";
    case Collective::kBarrier: return "barrier";
  }
  return "?";
}

double collective_seconds(Collective collective, std::size_t bytes, int num_ranks, const LinkCost& link) {
  if (num_ranks < 1) fail<InvalidArgument>("a collective needs at least 1 rank, got {}", num_ranks);
  if (link.bytes_per_s <= 0) fail<InvalidArgument>("link bandwidth must be positive, got {}", link.bytes_per_s);
  const double p = num_ranks;
  const double n = static_cast<double>(bytes);
  const double alpha = link.latency_s;
  const double beta = 1.0 / link.bytes_per_s;
  if (collective == Collective::kSendRecv) return alpha + n * beta;
  if (num_ranks == 1) return 0;
  switch (collective) {
    case Collective::kAllReduce:  // ring: reduce-scatter then all-gather
      return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta;
    case Collective::kAllGather:
    case Collective::kReduceScatter:  // ring, p - 1 steps of n / p bytes
      return (p - 1) * alpha + (p - 1) / p * n * beta;
    case Collective::kBroadcast:  // binomial tree
      return ceil_log2(num_ranks) * (alpha + n * beta);
    case Collective::kAllToAll:  // pairwise exchange: p - 1 steps of n / p bytes
      return (p - 1) * (alpha + n / p * beta);
    case Collective::kBarrier:  // dissemination
      return ceil_log2(num_ranks) * alpha;
    case Collective::kSendRecv: break;
  }
  return 0;
}

LinkCost fit_link_cost(std::span<const TimedMessage> samples) {
  // Weighted least squares on relative errors (weight 1 / t^2): small messages set the latency and
  // large ones the bandwidth, instead of the largest times deciding both.
  double w_sum = 0, wx = 0, wy = 0, wxx = 0, wxy = 0;
  for (const TimedMessage& s : samples) {
    if (!(s.seconds > 0)) continue;
    const double w = 1.0 / (s.seconds * s.seconds);
    const double x = static_cast<double>(s.bytes);
    w_sum += w;
    wx += w * x;
    wy += w * s.seconds;
    wxx += w * x * x;
    wxy += w * x * s.seconds;
  }
  const double sxx = w_sum * wxx - wx * wx;
  if (samples.size() < 2 || !(sxx > 1e-9 * w_sum * wxx)) {
    fail<InvalidArgument>("fitting a link needs timings at >= 2 distinct message sizes, got {} samples", samples.size());
  }
  // Time per byte: at least that of 1 TB/s (a positive slope even when noise makes it flat).
  const double seconds_per_byte = std::max((w_sum * wxy - wx * wy) / sxx, 1e-12);
  const double latency = std::max((wy - seconds_per_byte * wx) / w_sum, 0.0);
  return {latency, 1.0 / seconds_per_byte};
}

}  // namespace lemma::dist
