// Engine tests on the real stories260K model: batch invariance (a request's tokens and logits are
// bitwise the same alone or batched), chunked prefill, preemption by recompute and by swap, prefix
// cache hits, seeded sampling, parallel choices sharing prompt blocks, aborts and failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "lemma/base/error.h"
#include "unit/engine/engine_fixture.h"

namespace lemma::testing {
namespace {

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(stories_path()); }
};

// Each request alone on a fresh engine: the reference every batched run must equal bitwise.
Finished run_alone(RequestId id, const std::vector<int32_t>& prompt, const RequestOptions& options) {
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(id, prompt, options);
  auto done = run_to_completion(engine);
  return done.at(id);
}

void expect_same(const Finished& alone, const Finished& batched, RequestId id) {
  ASSERT_EQ(alone.tokens, batched.tokens) << "request " << id;
  ASSERT_EQ(alone.logits.size(), batched.logits.size());
  for (size_t i = 0; i < alone.logits.size(); ++i)
    ASSERT_EQ(0, std::memcmp(alone.logits[i].data(), batched.logits[i].data(), alone.logits[i].size() * sizeof(float)))
        << "request " << id << ": logits of output " << i << " differ bitwise";
  EXPECT_EQ(batched.finish_count, 1);
}

struct Workload {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestOptions> options;
};

Workload mixed_workload() {
  Workload w;
  const int64_t lengths[] = {1, 5, 17, 33, 70, 120};
  for (size_t i = 0; i < std::size(lengths); ++i) {
    w.prompts.push_back(prompt_of(lengths[i], static_cast<uint32_t>(i)));
    RequestOptions o = greedy(10 + static_cast<int64_t>(i) * 3);
    if (i % 2 == 1) {  // seeded sampling must be invariant too
      o.sampling.temperature = 0.9f;
      o.sampling.top_p = 0.95f;
      o.sampling.seed = 100 + i;
    }
    w.options.push_back(o);
  }
  return w;
}

// What a batched run left in the scheduler's stats, and the most host blocks it held after a step.
struct BatchedRun {
  SchedulerStats stats;
  int32_t max_host_blocks_used = 0;
};

BatchedRun expect_batched_equals_alone(const EngineConfig& config, const std::string& label) {
  const Workload w = mixed_workload();
  Engine engine(stories_model(), config);
  for (size_t i = 0; i < w.prompts.size(); ++i) engine.add_request(i + 1, w.prompts[i], w.options[i]);
  BatchedRun run;
  std::map<RequestId, Finished> batched;
  for (int i = 0; i < 10000 && engine.has_unfinished_requests(); ++i) {
    collect(engine.step(), engine, batched);
    run.max_host_blocks_used = std::max(run.max_host_blocks_used, engine.scheduler().stats().host_blocks_used);
    // The runner holds exactly the running requests: preempted ones left with the plan, finished
    // ones with their final output.
    EXPECT_EQ(engine.runner().num_tracked(), static_cast<size_t>(engine.scheduler().num_running())) << label;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_EQ(engine.runner().num_tracked(), 0u) << label;
  engine.scheduler().check_invariants();
  run.stats = engine.scheduler().stats();
  EXPECT_EQ(run.stats.kv_blocks_used, 0) << label;
  EXPECT_EQ(run.stats.host_blocks_used, 0) << label;
  for (size_t i = 0; i < w.prompts.size(); ++i) {
    SCOPED_TRACE(label);
    expect_same(run_alone(i + 1, w.prompts[i], w.options[i]), batched.at(i + 1), i + 1);
  }
  return run;
}

TEST_F(EngineTest, BatchedEqualsAloneBitwise) { expect_batched_equals_alone(engine_config(64), "batched"); }

// The runner samples a step's sequences on the forward's team; each has its own Sampler, so a
// thread count changes neither the logits nor any seeded token.
TEST_F(EngineTest, ThreadsChangeNoSampledToken) {
  Workload w = mixed_workload();
  for (size_t i = 0; i < w.options.size(); ++i) {  // every request samples, with each filter
    RequestOptions& o = w.options[i];
    o.sampling.temperature = 0.8f + 0.1f * static_cast<float>(i % 3);
    o.sampling.top_k = i % 3 == 0 ? 20 : 0;
    o.sampling.min_p = i % 3 == 1 ? 0.02f : 0.0f;
    o.sampling.top_p = i % 3 == 2 ? 0.9f : 1.0f;
    o.sampling.seed = 500 + i;
  }
  auto run = [&](int threads) {
    EngineConfig config = engine_config(64);
    config.num_threads = threads;
    Engine engine(stories_model(), config);
    for (size_t i = 0; i < w.prompts.size(); ++i) engine.add_request(i + 1, w.prompts[i], w.options[i]);
    return run_to_completion(engine);
  };
  const auto one = run(1), three = run(3);
  for (size_t i = 0; i < w.prompts.size(); ++i) expect_same(one.at(i + 1), three.at(i + 1), i + 1);
}

TEST_F(EngineTest, ChunkedPrefillEqualsAloneBitwise) {
  expect_batched_equals_alone(engine_config(64, /*token_budget=*/24), "chunked, budget 24");
}

TEST_F(EngineTest, PreemptionByRecomputeEqualsAlone) {
  // 12 blocks of 16 tokens cannot hold all six requests at once: the newest get preempted.
  EngineConfig c = engine_config(14, 64);
  expect_batched_equals_alone(c, "recompute preemption");
  Engine engine(stories_model(), c);
  const Workload w = mixed_workload();
  for (size_t i = 0; i < w.prompts.size(); ++i) engine.add_request(i + 1, w.prompts[i], w.options[i]);
  run_to_completion(engine);
  EXPECT_GT(engine.scheduler().num_preemptions(), 0u) << "the test did not exercise preemption";
}

// StepReport::first_scheduled names each request once, in the step that first grants it tokens:
// never again when it comes back after a preemption (the queue time is arrival -> first grant).
TEST_F(EngineTest, FirstScheduledOnceEvenAfterPreemption) {
  Engine engine(stories_model(), engine_config(14, 64));
  const Workload w = mixed_workload();
  for (size_t i = 0; i < w.prompts.size(); ++i) engine.add_request(i + 1, w.prompts[i], w.options[i]);
  std::map<RequestId, int> firsts;
  for (int i = 0; i < 10000 && engine.has_unfinished_requests(); ++i) {
    const StepReport report = engine.step();
    for (RequestId id : report.first_scheduled) {
      ++firsts[id];
      if (const Request* r = engine.scheduler().find(id)) EXPECT_GT(r->num_computed_tokens(), 0);
    }
  }
  EXPECT_GT(engine.scheduler().num_preemptions(), 0u) << "the test did not exercise preemption";
  ASSERT_EQ(firsts.size(), w.prompts.size());
  for (auto [id, n] : firsts) EXPECT_EQ(n, 1) << "request " << id;
}

// Logprob details ride with their tokens from the runner to the output: one entry per new token,
// for the token itself (greedy: the top entry), and none for a request that did not ask.
TEST_F(EngineTest, LogprobsTravelWithTheirTokens) {
  Engine engine(stories_model(), engine_config(64));
  RequestOptions with = greedy(6);
  with.sampling.logprobs = true;
  with.sampling.top_logprobs = 2;
  engine.add_request(1, prompt_of(12, 1), with);
  engine.add_request(2, prompt_of(9, 2), greedy(6));
  size_t seen = 0;
  for (int i = 0; i < 100 && engine.has_unfinished_requests(); ++i)
    for (const EngineOutput& o : engine.step().outputs) {
      if (o.output.id == 2) {
        EXPECT_TRUE(o.output.logprobs.empty());
        continue;
      }
      ASSERT_EQ(o.output.logprobs.size(), o.output.new_token_ids.size());
      for (size_t k = 0; k < o.output.logprobs.size(); ++k) {
        const SampleResult& r = o.output.logprobs[k];
        EXPECT_EQ(r.token, o.output.new_token_ids[k]);
        EXPECT_LE(r.logprob, 0.0f);
        ASSERT_EQ(r.top.size(), 2u);
        EXPECT_EQ(r.top[0].token, r.token);
        EXPECT_EQ(r.top[0].logprob, r.logprob);
      }
      seen += o.output.logprobs.size();
    }
  EXPECT_EQ(seen, 6u);
}

TEST_F(EngineTest, PreemptionBySwapEqualsAlone) {
  EngineConfig c = engine_config(14, 64);
  c.scheduler.preemption_mode = PreemptionMode::kSwap;
  c.kv.num_host_blocks = 64;
  const BatchedRun run = expect_batched_equals_alone(c, "swap preemption");
  // Every preemption really went through the host tier and came back.
  EXPECT_GT(run.stats.num_preemptions, 0u);
  EXPECT_EQ(run.stats.num_swap_outs, run.stats.num_preemptions);
  EXPECT_EQ(run.stats.num_swap_ins, run.stats.num_swap_outs);
  EXPECT_EQ(run.stats.num_swap_fallbacks, 0u);
  EXPECT_GT(run.max_host_blocks_used, 0);
}

// A one-block host tier: a victim holding more blocks recomputes instead; each such fallback is
// counted (beside the swaps that did fit), and the outputs do not change.
TEST_F(EngineTest, SwapFallbackToRecomputeEqualsAlone) {
  EngineConfig c = engine_config(14, 64);
  c.scheduler.preemption_mode = PreemptionMode::kSwap;
  c.kv.num_host_blocks = 1;
  const BatchedRun run = expect_batched_equals_alone(c, "swap fallback");
  EXPECT_GT(run.stats.num_swap_fallbacks, 0u);
  EXPECT_EQ(run.stats.num_swap_fallbacks + run.stats.num_swap_outs, run.stats.num_preemptions);
}

TEST_F(EngineTest, PrefixCacheHitGivesIdenticalOutput) {
  const auto shared = prompt_of(48, 7);
  auto with_tail = [&](uint32_t seed) {
    auto p = shared;
    auto tail = prompt_of(9, seed);
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  };
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(1, with_tail(1), greedy(8));
  auto first = run_to_completion(engine);
  EXPECT_EQ(first.at(1).cached_tokens, 0);
  engine.add_request(2, with_tail(2), greedy(8));
  auto second = run_to_completion(engine);
  EXPECT_EQ(second.at(2).cached_tokens, 48) << "three full 16-token blocks of the shared prefix must hit";
  EXPECT_EQ(engine.scheduler().stats().prefix_cache_hits, 1u);
  expect_same(run_alone(2, with_tail(2), greedy(8)), second.at(2), 2);
}

TEST_F(EngineTest, ChoicesShareThePromptAndMatchSeparateRequests) {
  const auto prompt = prompt_of(40, 3);
  auto sampled = [](uint64_t seed) {
    RequestOptions o = greedy(12);
    o.sampling.temperature = 1.0f;
    o.sampling.seed = seed;
    return o;
  };
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(1, prompt, sampled(11), /*n=*/3);  // choices run as ids 1, 2, 3
  std::map<RequestId, Finished> done;
  std::map<RequestId, int> choice_of;
  for (int i = 0; i < 1000 && engine.has_unfinished_requests(); ++i) {
    const StepReport report = engine.step();
    for (const auto& o : report.outputs) choice_of[o.output.id] = o.choice;
    collect(report, engine, done);
  }
  EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(choice_of, (std::map<RequestId, int>{{1, 0}, {2, 1}, {3, 2}}));
  // Choice 0 is the n = 1 run; choice i runs with seed choice_seed(seed, i).
  EXPECT_EQ(done.at(1).tokens, run_alone(1, prompt, sampled(11)).tokens);
  EXPECT_EQ(done.at(2).tokens, run_alone(2, prompt, sampled(choice_seed(11, 1))).tokens);
  EXPECT_EQ(done.at(3).tokens, run_alone(3, prompt, sampled(choice_seed(11, 2))).tokens);
  EXPECT_NE(done.at(1).tokens, done.at(2).tokens);
}

TEST_F(EngineTest, ChoiceOfAFinishedParentRunsAlone) {
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(1, prompt_of(20, 1), greedy(1), /*n=*/2);
  auto done = run_to_completion(engine);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done.at(1).tokens, done.at(2).tokens);
  EXPECT_EQ(done.at(2).finish_count, 1);
}

TEST_F(EngineTest, AbortFreesBlocksAndIsIdempotent) {
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(1, prompt_of(50, 1), greedy(50));
  engine.add_request(2, prompt_of(30, 2), greedy(50));
  std::map<RequestId, Finished> done;
  collect(engine.step(), engine, done);
  collect(engine.step(), engine, done);
  auto out = engine.abort(1);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->output.status, RequestStatus::kFinishedCancelled);
  EXPECT_FALSE(engine.abort(1).has_value());
  done = run_to_completion(engine, done);
  EXPECT_EQ(done.at(2).tokens.size(), 50u);
  EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.runner().num_tracked(), 0u);
}

// A request aborted between two chunks of its prompt leaves the runner with the abort, not with a
// later plan; the engine then serves the next request as if it had never been there.
TEST_F(EngineTest, AbortMidPrefillDropsTheRequestAtOnce) {
  Engine engine(stories_model(), engine_config(64, /*token_budget=*/16));
  engine.add_request(1, prompt_of(100, 1), greedy(8));
  const StepReport first = engine.step();
  ASSERT_TRUE(first.outputs.empty()) << "the prompt must still be prefilling";
  EXPECT_EQ(engine.scheduler().find(1)->num_computed_tokens(), 16);
  EXPECT_EQ(engine.runner().num_tracked(), 1u);
  ASSERT_TRUE(engine.abort(1).has_value());
  EXPECT_EQ(engine.runner().num_tracked(), 0u);
  EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
  engine.add_request(2, prompt_of(30, 2), greedy(6));
  auto done = run_to_completion(engine);
  EXPECT_EQ(done.count(1), 0u);
  expect_same(run_alone(2, prompt_of(30, 2), greedy(6)), done.at(2), 2);
  EXPECT_EQ(engine.runner().num_tracked(), 0u);
}

TEST_F(EngineTest, StopTokenAndEosFinishAsStopped) {
  const auto prompt = prompt_of(10, 4);
  const auto free_run = run_alone(1, prompt, greedy(20));
  ASSERT_GE(free_run.tokens.size(), 5u);
  RequestOptions o = greedy(20);
  o.stop.stop_token_ids = {free_run.tokens[4]};
  const auto stopped = run_alone(1, prompt, o);
  EXPECT_EQ(stopped.status, RequestStatus::kFinishedStopped);
  // Stops at the first occurrence of that token, which it includes.
  const auto first = std::find(free_run.tokens.begin(), free_run.tokens.end(), free_run.tokens[4]);
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>(free_run.tokens.begin(), first + 1));
  EXPECT_EQ(free_run.status, RequestStatus::kFinishedLength);
}

TEST_F(EngineTest, BadRequestsAreRejectedWithoutHarm) {
  Engine engine(stories_model(), engine_config(64));
  EXPECT_THROW(engine.add_request(1, {1, 2, 9999}, greedy(4)), InvalidArgument);
  EXPECT_THROW(engine.add_request(1, {}, greedy(4)), InvalidArgument);
  EXPECT_THROW(engine.add_request(1, prompt_of(256, 1), greedy(10)), InvalidArgument);  // no room in max_model_len
  RequestOptions bad = greedy(4);
  bad.sampling.top_p = 2.0f;
  EXPECT_THROW(engine.add_request(1, {1, 2}, bad), InvalidArgument);
  EXPECT_THROW(engine.add_request(1, {1, 2}, greedy(4), /*n=*/0), InvalidArgument);
  engine.add_request(1, {1, 2, 3}, greedy(4));
  EXPECT_THROW(engine.add_request(1, {1, 2, 3}, greedy(4)), InvalidArgument);
  EXPECT_THROW(engine.add_request(0, {1, 2}, greedy(4), /*n=*/2), InvalidArgument);  // choice 1 would be id 1
  EXPECT_EQ(engine.scheduler().find(0), nullptr) << "a refused request queues nothing";
  auto done = run_to_completion(engine);
  EXPECT_EQ(done.at(1).tokens.size(), 4u);
}

TEST_F(EngineTest, ExpiredRequestsTimeOut) {
  Engine engine(stories_model(), engine_config(64));
  RequestOptions o = greedy(100);
  o.deadline = 5.0;
  engine.add_request(1, prompt_of(8, 1), o);
  engine.step();
  EXPECT_TRUE(engine.abort_expired(4.0).empty());
  auto expired = engine.abort_expired(6.0);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].output.status, RequestStatus::kFinishedTimeout);
  EXPECT_FALSE(engine.has_unfinished_requests());
}

// Seeded random workloads with random aborts: every request finishes exactly once, no block leaks,
// and the scheduler's invariants hold after every step.
TEST_F(EngineTest, RandomWorkloadsFinishEveryRequestOnceWithoutLeaks) {
  for (uint32_t seed = 0; seed < 4; ++seed) {
    EngineConfig c = engine_config(20, 40 + 16 * seed, 6);
    if (seed % 2) {
      c.scheduler.preemption_mode = PreemptionMode::kSwap;
      c.kv.num_host_blocks = 32;
    }
    Engine engine(stories_model(), c);
    std::map<RequestId, int> finishes;
    uint32_t x = seed + 1;
    auto next = [&] { return x = x * 1664525u + 1013904223u, x >> 8; };
    RequestId next_id = 1;
    for (int step = 0; step < 400 && (next_id <= 24 || engine.has_unfinished_requests()); ++step) {
      if (next_id <= 24 && next() % 3 == 0) {
        engine.add_request(next_id, prompt_of(1 + next() % 60, next_id), greedy(1 + next() % 20));
        ++next_id;
      }
      if (next() % 11 == 0 && next_id > 1)
        if (auto out = engine.abort(1 + next() % (next_id - 1))) ++finishes[out->output.id];
      for (auto& o : engine.step().outputs)
        if (o.output.finished()) ++finishes[o.output.id];
      engine.scheduler().check_invariants();
      ASSERT_EQ(engine.runner().num_tracked(), static_cast<size_t>(engine.scheduler().num_running())) << "seed " << seed;
    }
    EXPECT_FALSE(engine.has_unfinished_requests()) << "seed " << seed;
    EXPECT_EQ(finishes.size(), next_id - 1) << "seed " << seed;
    for (auto [id, n] : finishes) EXPECT_EQ(n, 1) << "request " << id << " seed " << seed;
    EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
    EXPECT_EQ(engine.runner().num_tracked(), 0u);
  }
}

}  // namespace
}  // namespace lemma::testing
