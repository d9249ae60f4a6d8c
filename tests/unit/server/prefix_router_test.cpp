#include "lemma/server/prefix_router.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "lemma/base/error.h"

namespace lemma::server {
namespace {

std::vector<int32_t> tokens(int first, int count) {
  std::vector<int32_t> ids(static_cast<std::size_t>(count));
  std::iota(ids.begin(), ids.end(), first);
  return ids;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(PrefixRouter, SharedPrefixFollowsItsReplicaEvenWhenBusier) {
  PrefixRouter router(2, 16, 1024, RoutingPolicy::kPrefix);
  const std::vector<int32_t> system = tokens(1000, 48);  // three full blocks
  const std::vector<int64_t> idle{0, 0};
  const RouteChoice first = router.route(concat(system, tokens(1, 5)), {}, idle);
  EXPECT_EQ(first.replica, 0);  // a tie goes to the first replica
  EXPECT_EQ(first.matched_tokens, 0);

  const std::vector<int64_t> first_busy{3, 0};
  const RouteChoice other = router.route(tokens(5000, 40), {}, first_busy);
  EXPECT_EQ(other.replica, 1) << "no prefix anywhere: the least loaded replica";

  const RouteChoice again = router.route(concat(system, tokens(7, 20)), {}, first_busy);
  EXPECT_EQ(again.replica, 0) << "the replica holding the prefix wins over load";
  EXPECT_EQ(again.matched_tokens, 48);

  // A partial block never matches: 47 shared tokens are two full blocks.
  const RouteChoice partial = router.route(concat(tokens(1000, 47), tokens(9000, 30)), {}, std::vector<int64_t>{0, 0});
  EXPECT_EQ(partial.replica, 0);
  EXPECT_EQ(partial.matched_tokens, 32);
}

TEST(PrefixRouter, ExtraKeysSeparateAdapters) {
  PrefixRouter router(2, 8, 1024, RoutingPolicy::kPrefix);
  const std::vector<int32_t> prompt = tokens(10, 32);
  const std::vector<uint64_t> adapter_a{11}, adapter_b{22};
  EXPECT_EQ(router.route(prompt, adapter_a, std::vector<int64_t>{0, 0}).replica, 0);
  const RouteChoice b = router.route(prompt, adapter_b, std::vector<int64_t>{1, 0});
  EXPECT_EQ(b.replica, 1) << "the same tokens under another adapter are not a cached prefix";
  EXPECT_EQ(b.matched_tokens, 0);
  EXPECT_EQ(router.route(prompt, adapter_a, std::vector<int64_t>{5, 0}).matched_tokens, 32);
}

TEST(PrefixRouter, HistoryIsBoundedAndKeepsChainHeads) {
  PrefixRouter router(2, 4, 3, RoutingPolicy::kPrefix);  // three block hashes per replica
  const std::vector<int32_t> long_prompt = tokens(0, 20);  // five blocks: only the first three are kept
  EXPECT_EQ(router.route(long_prompt, {}, std::vector<int64_t>{0, 0}).replica, 0);
  const RouteChoice back = router.route(long_prompt, {}, std::vector<int64_t>{1, 0});
  EXPECT_EQ(back.replica, 0);
  EXPECT_EQ(back.matched_tokens, 12) << "the chain's head survives eviction, its tail does not";
}

TEST(PrefixRouter, RoundRobinIgnoresPrefixes) {
  PrefixRouter router(3, 4, 64, RoutingPolicy::kRoundRobin);
  const std::vector<int32_t> prompt = tokens(0, 16);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(router.route(prompt, {}, std::vector<int64_t>{0, 0, 0}).replica, i % 3);
}

TEST(PrefixRouter, BadSettingsAreRefused) {
  EXPECT_THROW(PrefixRouter(0, 16, 8, RoutingPolicy::kPrefix), InvalidArgument);
  EXPECT_THROW(PrefixRouter(2, 0, 8, RoutingPolicy::kPrefix), InvalidArgument);
  PrefixRouter router(2, 16, 8, RoutingPolicy::kPrefix);
  EXPECT_THROW(router.route(tokens(0, 4), {}, std::vector<int64_t>{0}), InvalidArgument);
}

}  // namespace
}  // namespace lemma::server
