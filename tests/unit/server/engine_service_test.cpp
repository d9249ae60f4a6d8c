// EngineService on the real stories260K model, without HTTP: many threads submitting and cancelling
// at once (run it under the tsan preset), exactly one final delta per choice, no KV block left in
// use, batched results equal to solo results, errors delivered as final deltas, bounded queue.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "lemma/model/model.h"
#include "lemma/server/engine_service.h"
#include "support/shared_data.h"

namespace lemma::server::testing {
namespace {

// Collects deltas; counts final deltas per choice.
class CollectingSink final : public CompletionSink {
 public:
  void push(CompletionDelta d) override {
    std::lock_guard lock(mu_);
    auto& c = choices_[d.index];
    c.tokens.insert(c.tokens.end(), d.token_ids.begin(), d.token_ids.end());
    c.logprobs.insert(c.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
    if (d.finish_reason) {
      ++c.finals;
      c.reason = *d.finish_reason;
      c.error = d.error;
    }
    cv_.notify_all();
  }
  struct Choice {
    std::vector<int32_t> tokens;
    std::vector<SampleResult> logprobs;
    int finals = 0;
    RequestStatus reason = RequestStatus::kFinishedStopped;
    std::string error;
  };
  // Waits until `n` choices have a final delta (or 60 s pass).
  bool wait_final(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] {
      int done = 0;
      for (auto& [i, c] : choices_) done += c.finals > 0;
      return done >= n;
    });
  }
  std::map<int, Choice> choices() {
    std::lock_guard lock(mu_);
    return choices_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, Choice> choices_;
};

const Model& stories() {
  static const Model model = Model::open(lemma::testing::shared_data("models/stories260K/stories260K.gguf"), LoadMode::kCopy);
  return model;
}

EngineServiceConfig service_config(int32_t blocks = 128) {
  EngineServiceConfig c;
  c.engine.scheduler.max_num_seqs = 16;
  c.engine.scheduler.max_num_batched_tokens = 128;
  c.engine.scheduler.max_model_len = 256;
  c.engine.kv.num_device_blocks = blocks;
  c.engine.kv.block_size = 16;
  c.seed = 7;
  return c;
}

CompletionRequest greedy_request(const std::string& id, int salt, int64_t max_tokens) {
  CompletionRequest r;
  r.request_id = id;
  for (int i = 0; i < 5 + salt % 40; ++i) r.prompt_ids.push_back(1 + (salt * 31 + i * 7) % 500);
  r.sampling.temperature = 0.0f;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

class EngineServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(lemma::testing::shared_data("models/stories260K/stories260K.gguf")); }
};

// Each choice's deltas carry one logprob record per token, for that token (greedy: the top entry).
TEST_F(EngineServiceTest, LogprobsArriveWithEveryChoicesTokens) {
  EngineService service(stories(), service_config());
  CompletionRequest r = greedy_request("lp", 3, 7);
  r.n = 2;
  r.sampling.logprobs = true;
  r.sampling.top_logprobs = 1;
  auto sink = std::make_shared<CollectingSink>();
  ASSERT_TRUE(service.submit(r, sink));
  ASSERT_TRUE(sink->wait_final(2));
  for (const auto& [index, c] : sink->choices()) {
    ASSERT_EQ(c.tokens.size(), 7u) << "choice " << index;
    ASSERT_EQ(c.logprobs.size(), c.tokens.size()) << "choice " << index;
    for (size_t k = 0; k < c.tokens.size(); ++k) {
      EXPECT_EQ(c.logprobs[k].token, c.tokens[k]);
      ASSERT_EQ(c.logprobs[k].top.size(), 1u);
      EXPECT_EQ(c.logprobs[k].top[0].token, c.tokens[k]);
    }
  }
}

TEST_F(EngineServiceTest, ConcurrentGreedyRequestsEqualSoloRuns) {
  constexpr int kRequests = 12;
  std::vector<std::vector<int32_t>> solo(kRequests);
  {
    EngineService service(stories(), service_config());
    for (int i = 0; i < kRequests; ++i) {
      auto sink = std::make_shared<CollectingSink>();
      ASSERT_TRUE(service.submit(greedy_request("s" + std::to_string(i), i, 20), sink));
      ASSERT_TRUE(sink->wait_final(1));
      solo[i] = sink->choices().at(0).tokens;
    }
  }
  EngineService service(stories(), service_config());
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) sinks.push_back(std::make_shared<CollectingSink>());
  for (int i = 0; i < kRequests; ++i)
    clients.emplace_back([&, i] { EXPECT_TRUE(service.submit(greedy_request("c" + std::to_string(i), i, 20), sinks[i])); });
  for (auto& t : clients) t.join();
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(sinks[i]->wait_final(1));
    auto c = sinks[i]->choices().at(0);
    EXPECT_EQ(c.tokens, solo[i]) << "request " << i;
    EXPECT_EQ(c.finals, 1);
    EXPECT_EQ(c.reason, RequestStatus::kFinishedLength);
  }
  const EngineStats stats = service.stats();
  EXPECT_GT(stats.batch_size_sum, static_cast<double>(stats.batch_size_count)) << "no step batched two sequences";
}

// What a final delta's receiver reads from stats() at that moment: the request's blocks and its
// running slot are already released (a /metrics read right after the last chunk agrees).
class StatsAtFinalSink final : public CompletionSink {
 public:
  explicit StatsAtFinalSink(const EngineService& service) : service_(service) {}
  void push(CompletionDelta d) override {
    if (!d.finish_reason) return;
    std::lock_guard lock(mu_);
    at_final_ = service_.stats();
    done_ = true;
    cv_.notify_all();
  }
  EngineStats wait() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [&] { return done_; });
    return at_final_;
  }

 private:
  const EngineService& service_;
  std::mutex mu_;
  std::condition_variable cv_;
  EngineStats at_final_;
  bool done_ = false;
};

TEST_F(EngineServiceTest, GaugesAreCurrentWhenTheFinalDeltaArrives) {
  EngineServiceConfig config = service_config();
  config.engine.kv.enable_prefix_caching = false;  // with it, finished blocks stay cached (and free)
  EngineService service(stories(), config);
  for (int i = 0; i < 5; ++i) {
    auto sink = std::make_shared<StatsAtFinalSink>(service);
    ASSERT_TRUE(service.submit(greedy_request("g" + std::to_string(i), i, 8 + i), sink));
    const EngineStats s = sink->wait();
    EXPECT_EQ(s.kv_blocks_used, 0) << i;
    EXPECT_EQ(s.requests_running, 0) << i;
  }
}

TEST_F(EngineServiceTest, CancellationStormFreesEveryBlock) {
  EngineService service(stories(), service_config(64));
  constexpr int kThreads = 6, kPerThread = 20;
  std::vector<std::vector<std::shared_ptr<CollectingSink>>> sinks(kThreads);
  std::vector<std::thread> clients;
  std::atomic<int> accepted{0};
  for (int t = 0; t < kThreads; ++t)
    clients.emplace_back([&, t] {
      std::mt19937 rng(99 + t);
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = "r" + std::to_string(t) + "-" + std::to_string(i);
        auto sink = std::make_shared<CollectingSink>();
        CompletionRequest r = greedy_request(id, t * 100 + i, 4 + rng() % 60);
        r.n = 1 + static_cast<int>(rng() % 3);
        if (rng() % 2) {
          r.sampling.temperature = 0.9f;
          r.sampling.seed = rng();
        }
        if (!service.submit(r, sink)) continue;
        ++accepted;
        sinks[t].push_back(sink);
        if (rng() % 3 == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
          service.cancel(id);
          service.cancel(id);  // idempotent
        }
      }
    });
  for (auto& t : clients) t.join();
  int cancelled = 0;
  for (auto& per_thread : sinks)
    for (auto& sink : per_thread) {
      ASSERT_TRUE(sink->wait_final(1));
      // every choice of the request ends exactly once
      for (int waited = 0; waited < 6000; ++waited) {
        bool all = true;
        for (auto& [i, c] : sink->choices()) all = all && c.finals == 1;
        if (all) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      for (auto& [i, c] : sink->choices()) {
        EXPECT_EQ(c.finals, 1) << "choice " << i;
        cancelled += c.reason == RequestStatus::kFinishedCancelled;
      }
    }
  EXPECT_GT(accepted.load(), 0);
  EXPECT_GT(cancelled, 0) << "the storm did not cancel anything";
  for (int i = 0; i < 500 && (service.stats().kv_blocks_used != 0 || service.stats().requests_running != 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(service.stats().kv_blocks_used, 0);
  EXPECT_EQ(service.stats().requests_running, 0);
  EXPECT_EQ(service.stats().requests_waiting, 0);
}

TEST_F(EngineServiceTest, InvalidRequestsEndWithAnErrorDelta) {
  EngineService service(stories(), service_config());
  auto sink = std::make_shared<CollectingSink>();
  CompletionRequest r = greedy_request("bad", 1, 5);
  r.prompt_ids.push_back(100000);  // outside the vocabulary
  r.n = 2;
  ASSERT_TRUE(service.submit(r, sink));
  ASSERT_TRUE(sink->wait_final(2));
  for (auto& [i, c] : sink->choices()) {
    EXPECT_EQ(c.reason, RequestStatus::kFinishedFailed);
    EXPECT_NE(c.error.find("vocabulary"), std::string::npos) << c.error;
  }
  auto ok = std::make_shared<CollectingSink>();
  ASSERT_TRUE(service.submit(greedy_request("good", 2, 5), ok));
  ASSERT_TRUE(ok->wait_final(1));
  EXPECT_EQ(ok->choices().at(0).tokens.size(), 5u);
}

TEST_F(EngineServiceTest, ShutdownEndsLiveRequestsAndRefusesNewOnes) {
  auto service = std::make_unique<EngineService>(stories(), service_config());
  auto sink = std::make_shared<CollectingSink>();
  CompletionRequest r = greedy_request("long", 3, 200);
  ASSERT_TRUE(service->submit(r, sink));
  service->shutdown();
  ASSERT_TRUE(sink->wait_final(1));
  EXPECT_EQ(sink->choices().at(0).finals, 1);
  EXPECT_FALSE(service->submit(greedy_request("late", 4, 5), std::make_shared<CollectingSink>()));
}

TEST_F(EngineServiceTest, FullQueueRefusesSubmissions) {
  EngineServiceConfig c = service_config();
  c.max_waiting_requests = 1;
  EngineService service(stories(), c);
  int refused = 0;
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (int i = 0; i < 50; ++i) {
    auto sink = std::make_shared<CollectingSink>();
    if (service.submit(greedy_request("q" + std::to_string(i), i, 30), sink)) sinks.push_back(sink);
    else ++refused;
  }
  EXPECT_GT(refused, 0);
  for (auto& s : sinks) ASSERT_TRUE(s->wait_final(1));
}

}  // namespace
}  // namespace lemma::server::testing
