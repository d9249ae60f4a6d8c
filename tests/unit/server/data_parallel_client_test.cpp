// DataParallelClient over fake engines: routing by prefix, cancels reaching the owning replica only,
// a full replica's requests going to another, and the summed and per-replica stats.
#include "lemma/server/data_parallel_client.h"

#include <gtest/gtest.h>

#include <numeric>

#include "fake_engine.h"

namespace lemma::server {
namespace {

using testing::FakeEngine;

class CountingSink final : public CompletionSink {
 public:
  void push(CompletionDelta delta) override {
    if (delta.finish_reason) ++finals;
  }
  std::atomic<int> finals{0};
};

struct Fixture {
  FakeEngine* engines[2] = {};
  std::unique_ptr<DataParallelClient> client;

  explicit Fixture(std::chrono::microseconds token_delay = std::chrono::microseconds(0)) {
    std::vector<std::unique_ptr<EngineClient>> replicas;
    for (FakeEngine*& engine : engines) {
      auto fake = std::make_unique<FakeEngine>();
      fake->script = {5, 6, 7};
      fake->token_delay = token_delay;
      engine = fake.get();
      replicas.push_back(std::move(fake));
    }
    client = std::make_unique<DataParallelClient>(std::move(replicas),
                                                  std::make_unique<PrefixRouter>(2, 4, 1024, RoutingPolicy::kPrefix));
  }
};

CompletionRequest request(const std::string& id, int first_token, int count, int64_t max_tokens = 3) {
  CompletionRequest r;
  r.request_id = id;
  r.prompt_ids.resize(static_cast<std::size_t>(count));
  std::iota(r.prompt_ids.begin(), r.prompt_ids.end(), first_token);
  r.max_tokens = max_tokens;
  return r;
}

TEST(DataParallelClient, PrefixSharersLandTogetherAndOthersBalance) {
  Fixture f(std::chrono::milliseconds(20));  // requests stay in flight while the next ones route
  auto sink = std::make_shared<CountingSink>();
  ASSERT_TRUE(f.client->submit(request("a", 100, 16), sink));
  ASSERT_TRUE(f.client->submit(request("b", 900, 16), sink));  // no prefix: the idle replica
  ASSERT_TRUE(f.client->submit(request("c", 100, 12), sink));  // shares a's first 3 blocks
  EXPECT_EQ(f.engines[0]->requests().size(), 2u);
  EXPECT_EQ(f.engines[1]->requests().size(), 1u);
  EXPECT_EQ(f.engines[1]->requests()[0].request_id, "b");

  f.client->cancel("b");
  EXPECT_EQ(f.engines[1]->cancel_count("b"), 1);
  EXPECT_EQ(f.engines[0]->total_cancels(), 0) << "a cancel reaches only the owning replica";
  for (FakeEngine* engine : f.engines) engine->join_all();
  EXPECT_EQ(sink->finals.load(), 3) << "every request ended exactly once";

  const EngineStats stats = f.client->stats();
  ASSERT_EQ(stats.replicas.size(), 2u);
  EXPECT_EQ(stats.replicas[0].routed_requests, 2);
  EXPECT_EQ(stats.replicas[1].routed_requests, 1);
  EXPECT_EQ(stats.replicas[0].routed_matched_tokens, 12);
  // Everything has finished: a new unrelated prompt ties on load and goes to replica 0.
  ASSERT_TRUE(f.client->submit(request("d", 5000, 8), sink));
  EXPECT_EQ(f.engines[0]->requests().back().request_id, "d");
  for (FakeEngine* engine : f.engines) engine->join_all();
}

TEST(DataParallelClient, AFullReplicaPassesItsRequestOn) {
  Fixture f;
  auto sink = std::make_shared<CountingSink>();
  ASSERT_TRUE(f.client->submit(request("a", 100, 16), sink));
  for (FakeEngine* engine : f.engines) engine->join_all();
  f.engines[0]->capacity = 0;
  ASSERT_TRUE(f.client->submit(request("b", 100, 16), sink)) << "replica 0 holds the prefix but is full";
  EXPECT_EQ(f.engines[1]->requests().size(), 1u);
  f.engines[1]->capacity = 0;
  EXPECT_FALSE(f.client->submit(request("c", 100, 16), sink)) << "every replica full: 429";
  f.client->cancel("c");  // unknown: ignored
  for (FakeEngine* engine : f.engines) engine->join_all();
  EXPECT_EQ(sink->finals.load(), 2);
}

TEST(DataParallelClient, ChoicesCountAsOneRequestUntilTheLastEnds) {
  Fixture f;
  auto sink = std::make_shared<CountingSink>();
  CompletionRequest r = request("n3", 1, 3);  // shorter than a block: no history, so only load can tell
  r.n = 3;
  ASSERT_TRUE(f.client->submit(r, sink));
  for (FakeEngine* engine : f.engines) engine->join_all();
  EXPECT_EQ(sink->finals.load(), 3);
  // Its replica is idle again, so a new prompt ties and goes to replica 0 (where n3 went).
  ASSERT_TRUE(f.client->submit(request("x", 7000, 3), sink));
  EXPECT_EQ(f.engines[0]->requests().size(), 2u);
  for (FakeEngine* engine : f.engines) engine->join_all();
}

TEST(AddEngineStats, SumsCountersAndHistograms) {
  EngineStats a, b;
  a.requests_running = 2;
  a.prefix_cache_hits = 5;
  a.batch_size_bucket_counts = {1, 2, 2};
  a.spec_acceptance_lengths[1] = 4;
  b.requests_running = 3;
  b.prefix_cache_hits = 1;
  b.batch_size_bucket_counts = {0, 1, 3};
  b.spec_acceptance_lengths[1] = 1;
  b.moe_load_imbalance.observe(kMoeLoadImbalanceBuckets, 1.5);
  EngineStats total;
  add_engine_stats(total, a);
  add_engine_stats(total, b);
  EXPECT_EQ(total.requests_running, 5);
  EXPECT_EQ(total.prefix_cache_hits, 6);
  EXPECT_EQ(total.batch_size_bucket_counts, (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(total.spec_acceptance_lengths[1], 5);
  EXPECT_EQ(total.moe_load_imbalance.count, 1);
}

}  // namespace
}  // namespace lemma::server
