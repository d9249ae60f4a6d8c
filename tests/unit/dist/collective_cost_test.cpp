#include "lemma/dist/collective_cost.h"
#include "lemma/dist/collective_bench.h"

#include <gtest/gtest.h>

#include <vector>

#include "lemma/base/error.h"

namespace lemma::dist {
namespace {

TEST(CollectiveCost, RingAllReduceByHand) {
  const LinkCost link{1e-6, 1e9};
  // 4 ranks, 4 MB: 6 latencies + 2 * 3/4 * 4e6 bytes / 1e9 B/s = 6e-6 + 6e-3.
  EXPECT_NEAR(collective_seconds(Collective::kAllReduce, 4'000'000, 4, link), 6e-6 + 6e-3, 1e-12);
  EXPECT_NEAR(collective_seconds(Collective::kAllGather, 4'000'000, 4, link), 3e-6 + 3e-3, 1e-12);
  EXPECT_NEAR(collective_seconds(Collective::kBroadcast, 1000, 5, link), 3 * (1e-6 + 1e-6), 1e-12);
  EXPECT_NEAR(collective_seconds(Collective::kAllToAll, 4000, 4, link), 3 * (1e-6 + 1e-6), 1e-12);
  EXPECT_NEAR(collective_seconds(Collective::kSendRecv, 1000, 2, link), 2e-6, 1e-12);
  EXPECT_EQ(collective_seconds(Collective::kAllReduce, 4'000'000, 1, link), 0.0) << "one rank moves nothing";
  EXPECT_THROW(collective_seconds(Collective::kAllReduce, 8, 0, link), InvalidArgument);
}

TEST(CollectiveCost, FitRecoversALine) {
  const LinkCost truth{2e-6, 5e9};
  std::vector<TimedMessage> samples;
  for (std::size_t bytes : {64u, 4096u, 65536u, 1048576u}) {
    samples.push_back({bytes, truth.latency_s + static_cast<double>(bytes) / truth.bytes_per_s});
  }
  const LinkCost fitted = fit_link_cost(samples);
  EXPECT_NEAR(fitted.latency_s, truth.latency_s, 1e-12);
  EXPECT_NEAR(fitted.bytes_per_s / truth.bytes_per_s, 1.0, 1e-9);
}

TEST(CollectiveCost, FitClampsNoiseAndNeedsTwoSizes) {
  // Timings that fall with size (noise): latency stays >= 0, bandwidth finite and positive.
  const std::vector<TimedMessage> falling{{64, 3e-6}, {1 << 20, 1e-6}};
  const LinkCost fitted = fit_link_cost(falling);
  EXPECT_GE(fitted.latency_s, 0.0);
  EXPECT_GT(fitted.bytes_per_s, 0.0);
  const std::vector<TimedMessage> one_size{{64, 1e-6}, {64, 2e-6}};
  EXPECT_THROW(fit_link_cost(one_size), InvalidArgument);
}

TEST(CollectiveCost, LinksFollowThePlacement) {
  const Topology topology = discover_topology("pack:2 numa:2 core:4 pu:1");
  const PlacementPlan plan = plan_placement(topology, 8);  // ranks 2n and 2n+1 share node n
  EXPECT_EQ(link_between(topology, plan, 0, 1), LinkKind::kSameNuma);
  EXPECT_EQ(link_between(topology, plan, 0, 2), LinkKind::kSamePackage);
  EXPECT_EQ(link_between(topology, plan, 0, 4), LinkKind::kCrossPackage);
  EXPECT_EQ(slowest_link(topology, plan), LinkKind::kCrossPackage);
  const PlacementPlan one_node = plan_placement(discover_topology("pack:1 numa:1 core:4 pu:1"), 2);
  EXPECT_EQ(slowest_link(discover_topology("pack:1 numa:1 core:4 pu:1"), one_node), LinkKind::kSameNuma);
  EXPECT_LT(default_link_cost(LinkKind::kSameNuma).latency_s, default_link_cost(LinkKind::kCrossHost).latency_s);
}

TEST(CollectiveCost, BenchRowsAreCheckedAgainstALinkFittedToBroadcasts) {
  const LinkCost truth{3e-6, 2e9};
  const int ranks = 4;  // binomial broadcast: 2 steps
  std::vector<CollectiveTiming> timings;
  for (std::size_t bytes : {1024u, 65536u, 1048576u}) {
    CollectiveTiming broadcast;
    broadcast.op = BenchOp::kBroadcast;
    broadcast.bytes = bytes;
    broadcast.p50_us = collective_seconds(Collective::kBroadcast, bytes, ranks, truth) * 1e6;
    timings.push_back(broadcast);
  }
  CollectiveTiming all_reduce;
  all_reduce.op = BenchOp::kAllReduce;
  all_reduce.bytes = 4096;
  all_reduce.p50_us = 1e6;  // measured times never enter the fit except the broadcasts.
  timings.push_back(all_reduce);
  const LinkCost fitted = fit_link_from_broadcasts(timings, ranks);
  EXPECT_NEAR(fitted.latency_s, truth.latency_s, 1e-12);
  EXPECT_NEAR(fitted.bytes_per_s / truth.bytes_per_s, 1.0, 1e-9);
  EXPECT_NEAR(predicted_us(all_reduce, ranks, fitted), (6 * 3e-6 + 1.5 * 4096 / 2e9) * 1e6, 1e-6);
  CollectiveTiming gather;
  gather.op = BenchOp::kAllGather;
  gather.bytes = 4096;  // per rank: 16 KiB gathered
  EXPECT_NEAR(predicted_us(gather, ranks, fitted), (3 * 3e-6 + 0.75 * 16384 / 2e9) * 1e6, 1e-6);
  EXPECT_THROW(fit_link_from_broadcasts({all_reduce}, ranks), InvalidArgument);
}

}  // namespace
}  // namespace lemma::dist
