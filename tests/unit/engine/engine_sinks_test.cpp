// Attention sinks (G10) on the real engine: streaming requests (S sinks + a window of W) against the
// golden sinks/stories260K-s4-w60.json (float64 reference, shared/tools/sink_attention_ref.py)
// through the scheduler, the runner and the block recycling; a 10,000-token stream in a pool of
// only S + W's blocks; the prefix cache never shares a streaming request's blocks; clear refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "golden_models.h"
#include "lemma/base/error.h"
#include "lemma/model/streaming_logits.h"
#include "unit/engine/engine_fixture.h"

namespace lemma::testing {
namespace {

const StreamingWindow kWindow{4, 60};

#define REQUIRE_SINKS_GOLDEN()                                                 \
  LEMMA_REQUIRE_SHARED(stories_path());                                        \
  LEMMA_REQUIRE_SHARED(shared_data("golden/sinks/stories260K-s4-w60.json"))

const nlohmann::json& stories_sinks() { return golden_json("sinks/stories260K-s4-w60.json"); }

RequestOptions streaming_greedy(int64_t max_tokens, StreamingWindow w = kWindow) {
  RequestOptions o = greedy(max_tokens);
  o.streaming = w;
  return o;
}

double golden_tolerance() { return 1e-4 * stories_sinks()["max_abs_logit"].get<double>() + 1e-5; }

double max_abs_diff(const std::vector<float>& logits, const nlohmann::json& golden_row) {
  double worst = 0.0;
  for (size_t v = 0; v < logits.size(); ++v)
    worst = std::max(worst, std::abs(static_cast<double>(logits[v]) - golden_row[v].get<double>()));
  return worst;
}

// Prompts of the golden ids cut at several lengths, prefilled in chunks of 24 tokens next to each
// other (and to a plain request): the sampled token is the golden argmax of the prompt's last step
// and the logits it came from are the golden row, although the middle of each prompt was evicted
// (blocks freed) while it was prefilled.
TEST(EngineSinks, ChunkedPrefillsMatchTheReference) {
  REQUIRE_SINKS_GOLDEN();
  const auto tokens = stories_sinks()["tokens"].get<std::vector<int32_t>>();
  const auto& rows = stories_sinks()["logits"];
  const auto& argmax = stories_sinks()["argmax"];
  EngineConfig c = engine_config(64, /*token_budget=*/24);
  c.scheduler.max_model_len = 512;
  Engine engine(stories_model(), c);
  const std::vector<int64_t> lengths = {40, 64, 65, 130, 217, 300};
  for (size_t i = 0; i < lengths.size(); ++i)
    engine.add_request(i, {tokens.begin(), tokens.begin() + lengths[i]}, streaming_greedy(1));
  engine.add_request(100, prompt_of(90, 7), greedy(8));  // a plain neighbour in the same steps
  std::map<RequestId, Finished> done;
  for (int i = 0; i < 1000 && engine.has_unfinished_requests(); ++i) {
    collect(engine.step(), engine, done);
    engine.scheduler().check_invariants();
  }
  EXPECT_GT(engine.scheduler().stats().num_blocks_dropped, 0u);
  for (size_t i = 0; i < lengths.size(); ++i) {
    const auto row = static_cast<size_t>(lengths[i] - 1);
    const Finished& f = done.at(i);
    ASSERT_EQ(f.tokens.size(), 1u);
    EXPECT_EQ(f.tokens[0], argmax[row].get<int32_t>()) << "prompt of " << lengths[i];
    EXPECT_LE(max_abs_diff(f.logits[0], rows[row]), golden_tolerance()) << "prompt of " << lengths[i];
    EXPECT_EQ(f.cached_tokens, 0);
  }
}

// Greedy decoding from BOS, one token per step: the reference's argmax follows the golden ids for
// its first 86 steps (22 of them past S + W = 64, with a window key evicted at every step), so the
// engine's continuation is those ids and then the reference's argmax at step 86.
TEST(EngineSinks, GreedyDecodeFollowsTheReference) {
  REQUIRE_SINKS_GOLDEN();
  const auto tokens = stories_sinks()["tokens"].get<std::vector<int32_t>>();
  const auto& argmax = stories_sinks()["argmax"];
  const auto& rows = stories_sinks()["logits"];
  ASSERT_EQ(tokens[0], 1);
  Engine engine(stories_model(), engine_config(8));
  engine.add_request(1, {1}, streaming_greedy(87));
  const auto done = run_to_completion(engine);
  const Finished& f = done.at(1);
  ASSERT_EQ(f.tokens.size(), 87u);
  for (size_t t = 0; t < 87; ++t) {
    EXPECT_EQ(f.tokens[t], argmax[t].get<int32_t>()) << "step " << t;
    EXPECT_LE(max_abs_diff(f.logits[t], rows[t]), golden_tolerance()) << "step " << t;
  }
  EXPECT_NE(f.tokens[86], tokens[87]);  // where streaming leaves the full-attention story
}

// 10,000 tokens streamed in a pool of the blocks S + W needs (6 of 16 tokens; plain decoding would
// need 626): the request never holds more, is never preempted, and every token is the argmax of
// the logits the model-level driver (its own block recycling, one token per forward) computes for
// the same ids.
TEST(EngineSinks, TenThousandTokenStreamKeepsBlocksBounded) {
  LEMMA_REQUIRE_SHARED(stories_path());
  constexpr int64_t kTokens = 10000;
  const int64_t bound = kWindow.max_live_blocks(16, 1);
  ASSERT_EQ(bound, 6);
  EngineConfig c = engine_config(static_cast<int32_t>(bound), /*token_budget=*/1);
  c.scheduler.max_model_len = kTokens + 1;
  c.keep_logits = false;
  Engine engine(stories_model(), c);
  engine.add_request(1, {1}, streaming_greedy(kTokens));
  std::map<RequestId, Finished> done;
  int32_t max_used = 0;
  while (engine.has_unfinished_requests()) {
    collect(engine.step(), engine, done);
    max_used = std::max(max_used, engine.scheduler().stats().kv_blocks_used);
  }
  const SchedulerStats stats = engine.scheduler().stats();
  EXPECT_LE(max_used, bound);
  EXPECT_EQ(stats.num_preemptions, 0u);
  EXPECT_GE(stats.num_blocks_dropped, static_cast<uint64_t>(kTokens / 16 - bound));
  EXPECT_EQ(stats.kv_blocks_used, 0);
  const Finished& f = done.at(1);
  ASSERT_EQ(static_cast<int64_t>(f.tokens.size()), kTokens);
  EXPECT_EQ(f.status, RequestStatus::kFinishedLength);
  std::vector<int32_t> ids = {1};
  ids.insert(ids.end(), f.tokens.begin(), f.tokens.end() - 1);
  const StreamingLogits ref = streaming_sequence_logits(stories_model(), ids, kWindow, 1);
  const auto vocab = static_cast<size_t>(stories_model().config().vocab_size);
  int64_t mismatches = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const auto row = std::span(ref.logits).subspan(t * vocab, vocab);
    mismatches += std::max_element(row.begin(), row.end()) - row.begin() != f.tokens[t];
  }
  EXPECT_EQ(mismatches, 0);
}

// A streaming request never reads the prefix cache (its ids were cached by a plain request) nor
// feeds it (a plain request after it with the same ids computes everything, and its logits are a
// fresh engine's).
TEST(EngineSinks, PrefixCacheIsNeverSharedWithStreamingRequests) {
  LEMMA_REQUIRE_SHARED(stories_path());
  const std::vector<int32_t> prompt = prompt_of(160, 3);
  EngineConfig c = engine_config(64, 64);
  Engine engine(stories_model(), c);
  engine.add_request(1, prompt, greedy(4));
  auto done = run_to_completion(engine);
  engine.add_request(2, prompt, streaming_greedy(4));
  done = run_to_completion(engine, done);
  engine.add_request(3, prompt, greedy(4));
  done = run_to_completion(engine, done);
  EXPECT_EQ(done.at(2).cached_tokens, 0);
  EXPECT_GT(done.at(3).cached_tokens, 0);  // request 1's blocks, still cached
  // Streaming first, then plain, in a fresh engine: the plain one finds nothing.
  Engine fresh(stories_model(), c);
  fresh.add_request(4, prompt, streaming_greedy(4));
  auto later = run_to_completion(fresh);
  fresh.add_request(5, prompt, greedy(4));
  later = run_to_completion(fresh, later);
  EXPECT_EQ(later.at(5).cached_tokens, 0);
  EXPECT_EQ(later.at(5).tokens, done.at(1).tokens);
  EXPECT_EQ(later.at(5).logits, done.at(1).logits);
  EXPECT_NE(later.at(4).logits, done.at(1).logits);  // 160 tokens > S + W: not full attention
}

TEST(EngineSinks, UnsupportedCombinationsAreRefused) {
  LEMMA_REQUIRE_SHARED(stories_path());
  Engine engine(stories_model(), engine_config(64));
  const auto message = [&](RequestOptions o) {
    try {
      engine.add_request(9, {1, 2, 3}, std::move(o));
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(streaming_greedy(4, {4, -1})).find("streaming_window must be >= 1"), std::string::npos);
  EXPECT_NE(message(streaming_greedy(4, {-2, 8})).find("attention_sinks must be >= 0"), std::string::npos);
  const int64_t context = stories_model().config().max_position_embeddings;
  EXPECT_NE(message(streaming_greedy(4, {4, context})).find("exceeds the context"), std::string::npos);
  RequestOptions beams = streaming_greedy(4);
  beams.sampling.beam_search = BeamSearchParams{};
  beams.sampling.beam_search->width = 2;
  EXPECT_NE(message(beams).find("beam search is not supported with attention sinks"), std::string::npos);
  EXPECT_FALSE(engine.has_unfinished_requests());
}

}  // namespace
}  // namespace lemma::testing
