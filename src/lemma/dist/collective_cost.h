// The time a collective costs on a link, as latency + bytes / bandwidth per message step of the
// algorithm an implementation uses (ring all-reduce / all-gather / reduce-scatter, binomial-tree
// broadcast, pairwise all-to-all). The link figures come from defaults per kind of link, or are fitted
// to measured point-to-point times (`fit_link_cost`), so a benchmark can compare the model's
// predictions with what the collectives really take.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "lemma/dist/placement.h"

namespace lemma::dist {

enum class LinkKind {
  kSameNuma,      // shared memory inside one NUMA node
  kSamePackage,   // shared memory across NUMA nodes of one socket
  kCrossPackage,  // shared memory across sockets
  kCrossHost,     // the network
};
std::string_view link_kind_name(LinkKind kind);

struct LinkCost {
  double latency_s = 0;     // per message
  double bytes_per_s = 0;   // per direction
};

// Conservative figures for a link that has not been measured (order of magnitude only).
LinkCost default_link_cost(LinkKind kind);

// The slowest link two ranks of `plan` cross (ranks on different hosts are the caller's knowledge).
LinkKind link_between(const Topology& topology, const PlacementPlan& plan, int rank_a, int rank_b);
// The slowest link among all pairs of ranks in `plan`.
LinkKind slowest_link(const Topology& topology, const PlacementPlan& plan);

enum class Collective { kSendRecv, kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll, kBarrier };
std::string_view collective_name(Collective collective);

// Predicted seconds for `collective` over `num_ranks` ranks on `link`; `bytes` is the size of the
// whole vector (all-reduce, broadcast), of the gathered result (all-gather), of the input
// (reduce-scatter), of all a rank sends (all-to-all), or of the message (send/recv).
double collective_seconds(Collective collective, std::size_t bytes, int num_ranks, const LinkCost& link);

struct TimedMessage {
  std::size_t bytes = 0;
  double seconds = 0;  // one-way time of one message of `bytes`
};

// Least-squares fit (on relative errors) of seconds = latency + bytes / bandwidth; a non-positive
// slope or intercept is clamped (a link never has negative latency or infinite bandwidth). Needs >= 2 distinct sizes.
LinkCost fit_link_cost(std::span<const TimedMessage> samples);

}  // namespace lemma::dist
