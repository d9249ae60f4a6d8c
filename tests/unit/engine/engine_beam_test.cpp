// Beam search as the engine serves it, on stories260K: W = 1 is greedy decoding; beams leave no KV
// block or runner state behind, also when aborted mid-search; preemption (recompute and swap) does
// not change a result; other requests in the same steps keep their tokens and logits bitwise; and
// impossible requests are refused without harm.
#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "unit/engine/beam_fixture.h"

namespace lemma::testing {
namespace {

constexpr int32_t kStoriesEos = 2;

class EngineBeamTest : public ::testing::Test {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(stories_path()); }
};

std::vector<Hypothesis> beams_alone(RequestId id, const std::vector<int32_t>& prompt, const RequestOptions& o, int n) {
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(id, prompt, o, n);
  return run_beams(engine, {id}).at(id);
}

// The one beam keeps the best next token each step; EOS ranked first ends it exactly where greedy
// decoding stops (a finished hypothesis that outscores the live one ends the search). Penalties and
// logit_bias apply to both alike.
TEST_F(EngineBeamTest, OneBeamIsGreedyDecoding) {
  int stopped = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    RequestOptions g = greedy(80);
    g.stop.ignore_eos = false;
    g.stop.eos_token_id = kStoriesEos;
    // EOS's raw logit is about 20 below the best: biased up to compete, in some runs enough to win.
    g.sampling.logit_bias = {{kStoriesEos, 16.0f + 2.0f * static_cast<float>(seed)}};
    if (seed % 2 == 0) {
      g.sampling.presence_penalty = 0.4f;
      g.sampling.repetition_penalty = 1.2f;
    }
    RequestOptions b = g;
    b.sampling.beam_search = BeamSearchParams{1, 1.0f, EarlyStopping::kHeuristic};
    const auto prompt = prompt_of(12 + seed, seed);
    Engine engine(stories_model(), engine_config(64));
    engine.add_request(1, prompt, g);
    const Finished greedy_run = run_to_completion(engine).at(1);
    const std::vector<Hypothesis> beam = beams_alone(1, prompt, b, 1);
    ASSERT_EQ(beam.size(), 1u);
    EXPECT_EQ(beam[0].tokens, greedy_run.tokens) << "seed " << seed;
    EXPECT_EQ(beam[0].status, greedy_run.status) << "seed " << seed;
    stopped += greedy_run.status == RequestStatus::kFinishedStopped;
  }
  EXPECT_GT(stopped, 0) << "no greedy run ended at EOS: the test would not check it";
}

TEST_F(EngineBeamTest, WiderBeamsScoreAtLeastAsWellAndShareThePrompt) {
  const auto prompt = prompt_of(40, 3);
  const std::vector<Hypothesis> one = beams_alone(1, prompt, beam_options(1, 24), 1);
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(1, prompt, beam_options(4, 24), 4);
  int64_t most_blocks = 0;
  BeamResults got;
  std::map<RequestId, Finished> none;
  while (engine.has_unfinished_requests()) {
    collect_beams(engine.step(), engine, {1}, got, none);
    most_blocks = std::max<int64_t>(most_blocks, engine.scheduler().stats().kv_blocks_used);
  }
  const std::vector<Hypothesis>& four = got.at(1);
  ASSERT_EQ(four.size(), 4u);
  EXPECT_GE(four[0].score, one[0].score - 1e-6);
  for (size_t i = 1; i < four.size(); ++i) EXPECT_GE(four[i - 1].score, four[i].score);
  for (const Hypothesis& h : four) EXPECT_EQ(h.tokens.size(), 24u);
  // 4 beams of 64 tokens own 4 blocks each without sharing; the 40-token prompt's 2 full blocks
  // are shared (copy-on-write), so at most 4 x 2 + 2 + a block being copied are live.
  EXPECT_LE(most_blocks, 4 * 2 + 2 + 1);
  EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.runner().num_tracked(), 0u);
}

TEST_F(EngineBeamTest, AbortMidSearchEndsEveryChoiceAndFreesEverything) {
  Engine engine(stories_model(), engine_config(64));
  engine.add_request(1, prompt_of(30, 1), beam_options(4, 40), /*n=*/3);
  engine.add_request(10, prompt_of(20, 2), greedy(30));
  BeamResults got;
  std::map<RequestId, Finished> others;
  for (int i = 0; i < 6; ++i) collect_beams(engine.step(), engine, {1}, got, others);
  EXPECT_TRUE(got.empty());
  EXPECT_GT(engine.scheduler().num_running(), 2) << "the beams must be running as sequences";
  const auto aborted = engine.abort(2);  // choice 1 ends the search
  ASSERT_TRUE(aborted.has_value());
  EXPECT_EQ(aborted->choice, 1);
  EXPECT_EQ(aborted->output.status, RequestStatus::kFinishedCancelled);
  EXPECT_FALSE(engine.abort(2).has_value());
  const auto choice2 = engine.abort(3);  // already ended: its final output, once
  ASSERT_TRUE(choice2.has_value());
  EXPECT_EQ(choice2->choice, 2);
  EXPECT_EQ(engine.scheduler().num_running(), 1) << "only the greedy request is left";
  while (engine.has_unfinished_requests()) collect_beams(engine.step(), engine, {1}, got, others);
  ASSERT_EQ(got.at(1).size(), 1u);  // choice 0, with the next step
  EXPECT_EQ(got.at(1)[0].status, RequestStatus::kFinishedCancelled);
  EXPECT_EQ(others.at(10).tokens.size(), 30u);
  EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.runner().num_tracked(), 0u);
  EXPECT_FALSE(engine.abort(1).has_value());
}

TEST_F(EngineBeamTest, ExpiredBeamRequestsTimeOutWhole) {
  Engine engine(stories_model(), engine_config(64));
  RequestOptions o = beam_options(3, 40);
  o.deadline = 5.0;
  engine.add_request(1, prompt_of(30, 1), o, /*n=*/2);
  for (int i = 0; i < 4; ++i) engine.step();
  EXPECT_TRUE(engine.abort_expired(4.0).empty());
  const auto outs = engine.abort_expired(6.0);
  ASSERT_EQ(outs.size(), 2u);
  for (const auto& out : outs) EXPECT_EQ(out.output.status, RequestStatus::kFinishedTimeout);
  EXPECT_FALSE(engine.has_unfinished_requests());
  EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.runner().num_tracked(), 0u);
}

// Two beam searches and two greedy requests in a cache too small for all of them at once: beams
// are preempted (recompute, or swap to the host tier) and come back; every result is the one each
// request gets alone in a roomy cache.
TEST_F(EngineBeamTest, PreemptionDoesNotChangeResults) {
  const auto beam_a = prompt_of(20, 5), beam_b = prompt_of(25, 6);
  const auto alone_a = beams_alone(1, beam_a, beam_options(3, 40), 3);
  const auto alone_b = beams_alone(20, beam_b, beam_options(2, 40, 0.7f), 2);
  std::map<RequestId, Finished> greedy_alone;
  for (RequestId id : {30, 40}) {
    Engine engine(stories_model(), engine_config(64));
    engine.add_request(id, prompt_of(30, static_cast<uint32_t>(id)), greedy(40));
    greedy_alone[id] = run_to_completion(engine).at(id);
  }
  for (const PreemptionMode mode : {PreemptionMode::kRecompute, PreemptionMode::kSwap}) {
    SCOPED_TRACE(static_cast<int>(mode));
    EngineConfig config = engine_config(14);
    config.keep_logits = false;
    config.scheduler.preemption_mode = mode;
    config.kv.num_host_blocks = mode == PreemptionMode::kSwap ? 64 : 0;
    Engine engine(stories_model(), config);
    engine.add_request(1, beam_a, beam_options(3, 40), 3);
    engine.add_request(20, beam_b, beam_options(2, 40, 0.7f), 2);
    for (RequestId id : {30, 40}) engine.add_request(id, prompt_of(30, static_cast<uint32_t>(id)), greedy(40));
    std::map<RequestId, Finished> others;
    const BeamResults got = run_beams(engine, {1, 20}, &others);
    EXPECT_GT(engine.scheduler().num_preemptions(), 0u) << "the cache must be tight enough to preempt";
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(got.at(1).at(i).tokens, alone_a.at(i).tokens) << "A choice " << i;
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(got.at(20).at(i).tokens, alone_b.at(i).tokens) << "B choice " << i;
    for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(got.at(1).at(i).score, alone_a.at(i).score) << "A choice " << i;
    for (RequestId id : {30, 40}) EXPECT_EQ(others.at(id).tokens, greedy_alone.at(id).tokens) << id;
    EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
    EXPECT_EQ(engine.scheduler().stats().host_blocks_used, 0);
    EXPECT_EQ(engine.runner().num_tracked(), 0u);
  }
}

// Batch invariance: a greedy and a seeded request produce the same tokens and logits, bitwise,
// whether beam searches share their steps or not.
TEST_F(EngineBeamTest, OtherRequestsAreUnchangedByBeamsInTheirBatch) {
  const auto run = [](bool with_beams) {
    Engine engine(stories_model(), engine_config(64));
    RequestOptions sampled = greedy(30);
    sampled.sampling.temperature = 0.9f;
    sampled.sampling.seed = 7;
    engine.add_request(1, prompt_of(33, 1), greedy(30));
    engine.add_request(2, prompt_of(17, 2), sampled);
    if (with_beams) {
      engine.add_request(10, prompt_of(21, 3), beam_options(4, 25), 2);
      engine.add_request(20, prompt_of(9, 4), beam_options(3, 35, 1.5f, EarlyStopping::kNever), 3);
    }
    std::map<RequestId, Finished> others;
    run_beams(engine, {10, 20}, &others);
    return others;
  };
  const auto alone = run(false), shared = run(true);
  for (RequestId id : {1, 2}) {
    EXPECT_EQ(shared.at(id).tokens, alone.at(id).tokens) << id;
    EXPECT_EQ(shared.at(id).logits, alone.at(id).logits) << id;
  }
}

TEST_F(EngineBeamTest, ImpossibleBeamRequestsAreRefusedWithoutHarm) {
  Engine engine(stories_model(), engine_config(/*num_blocks=*/16, 256, /*max_seqs=*/8));
  EXPECT_THROW(engine.add_request(1, prompt_of(10, 1), beam_options(2, 10), /*n=*/3), InvalidArgument);  // n > W
  EXPECT_THROW(engine.add_request(1, prompt_of(10, 1), beam_options(9, 10), 1), InvalidArgument);  // > max_num_seqs
  EXPECT_THROW(engine.add_request(1, prompt_of(10, 1), beam_options(6, 60), 1), InvalidArgument);  // 6 x 5 blocks > 16
  EXPECT_THROW(engine.add_request(1, prompt_of(10, 1), beam_options(0, 10), 1), InvalidArgument);  // width 0
  EXPECT_THROW(engine.add_request(Engine::kFirstBeamSequence, prompt_of(10, 1), greedy(4)), InvalidArgument);
  EXPECT_FALSE(engine.has_unfinished_requests());
  engine.add_request(1, prompt_of(10, 1), beam_options(3, 10), 2);  // ids 1, 2 are its choices
  EXPECT_THROW(engine.add_request(2, prompt_of(10, 1), greedy(4)), InvalidArgument);
  const BeamResults got = run_beams(engine, {1});
  EXPECT_EQ(got.at(1).size(), 2u);
  EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
}

}  // namespace
}  // namespace lemma::testing
