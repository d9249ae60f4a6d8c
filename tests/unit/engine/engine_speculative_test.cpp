// Speculative decoding with prompt-lookup drafts in the continuous-batching engine: drafts verified
// in the step's one forward give exactly the tokens plain decoding gives (greedy and seeded sampling:
// draws are keyed by output position), batched, with chunked prefill and under preemption, while
// drafts really are proposed and accepted; as a chain (ngram) and as a token tree (ngram-tree, G12).
#include <gtest/gtest.h>

#include "unit/engine/engine_fixture.h"

namespace lemma::testing {
namespace {

class EngineSpeculativeTest : public ::testing::Test {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(stories_path()); }
};

struct SpecRun {
  std::map<RequestId, Finished> done;
  SchedulerStats stats;
};

// A story prompt the model continues with phrases it has seen (stories260K repeats itself), plus
// random prompts, greedy and seeded.
const std::vector<int32_t> kStory = {1, 403, 407, 261, 378, 281, 403, 407, 261, 378, 281, 403, 407};

SpecRun run_workload(EngineConfig config, int num_requests = 6) {
  config.keep_logits = false;
  Engine engine(stories_model(), config);
  const std::vector<int32_t>& story = kStory;
  for (RequestId id = 1; id <= static_cast<RequestId>(num_requests); ++id) {
    RequestOptions o = greedy(48);
    if (id % 2 == 0) {
      o.sampling.temperature = 0.8f;
      o.sampling.seed = 7 * id;
    }
    engine.add_request(id, id <= 2 ? story : prompt_of(5 + 9 * static_cast<int64_t>(id), static_cast<uint32_t>(id)), o);
  }
  SpecRun run;
  run.done = run_to_completion(engine);
  EXPECT_EQ(engine.runner().num_tracked(), 0u);
  engine.scheduler().check_invariants();
  run.stats = engine.scheduler().stats();
  EXPECT_EQ(run.stats.kv_blocks_used, 0);
  return run;
}

SpecRun expect_speculation_changes_no_token(EngineConfig config, const char* label, int num_requests = 6,
                                            spec::SpeculativeMethod method = spec::SpeculativeMethod::kNgram) {
  SCOPED_TRACE(label);
  const SpecRun plain = run_workload(config, num_requests);
  config.speculative = {method, 4, {}};
  const SpecRun spec = run_workload(config, num_requests);
  EXPECT_EQ(plain.done.size(), spec.done.size());
  for (const auto& [id, f] : plain.done) {
    if (spec.done.count(id) == 0) continue;
    EXPECT_EQ(spec.done.at(id).tokens, f.tokens) << "request " << id;
    EXPECT_EQ(spec.done.at(id).finish_count, 1) << "request " << id;
  }
  EXPECT_EQ(plain.stats.num_draft_tokens, 0u);
  EXPECT_GT(spec.stats.num_draft_tokens, 0u);
  EXPECT_GT(spec.stats.num_accepted_draft_tokens, 0u);
  EXPECT_LE(spec.stats.num_accepted_draft_tokens, spec.stats.num_draft_tokens);
  std::printf("[figure] %s: %llu drafts, %llu accepted (%.0f%%), %llu steps vs %llu plain\n", label,
              static_cast<unsigned long long>(spec.stats.num_draft_tokens),
              static_cast<unsigned long long>(spec.stats.num_accepted_draft_tokens),
              100.0 * static_cast<double>(spec.stats.num_accepted_draft_tokens) /
                  static_cast<double>(spec.stats.num_draft_tokens),
              static_cast<unsigned long long>(spec.stats.num_steps), static_cast<unsigned long long>(plain.stats.num_steps));
  return spec;
}

// Alone, every accepted draft is a step saved: the request ends in (plain steps - accepted) steps.
TEST_F(EngineSpeculativeTest, AcceptedDraftsSaveSteps) {
  const SpecRun plain = run_workload(engine_config(64), 1);
  const SpecRun spec = expect_speculation_changes_no_token(engine_config(64), "alone", 1);
  EXPECT_EQ(spec.stats.num_steps, plain.stats.num_steps - spec.stats.num_accepted_draft_tokens);
}

TEST_F(EngineSpeculativeTest, NgramDraftsGiveThePlainTokensBatched) {
  expect_speculation_changes_no_token(engine_config(64), "batched");
}

TEST_F(EngineSpeculativeTest, NgramDraftsGiveThePlainTokensWithChunkedPrefill) {
  expect_speculation_changes_no_token(engine_config(64, 24), "chunked");
}

TEST_F(EngineSpeculativeTest, NgramDraftsGiveThePlainTokensUnderPreemption) {
  EngineConfig c = engine_config(14, 64);
  expect_speculation_changes_no_token(c, "preemption");
}

constexpr auto kTree = spec::SpeculativeMethod::kNgramTree;

TEST_F(EngineSpeculativeTest, AcceptedTreeDraftsSaveSteps) {
  const SpecRun plain = run_workload(engine_config(64), 1);
  const SpecRun spec = expect_speculation_changes_no_token(engine_config(64), "tree alone", 1, kTree);
  EXPECT_EQ(spec.stats.num_steps, plain.stats.num_steps - spec.stats.num_accepted_draft_tokens);
}

TEST_F(EngineSpeculativeTest, NgramTreeDraftsGiveThePlainTokensBatched) {
  expect_speculation_changes_no_token(engine_config(64), "tree batched", 6, kTree);
}

TEST_F(EngineSpeculativeTest, NgramTreeDraftsGiveThePlainTokensWithChunkedPrefill) {
  expect_speculation_changes_no_token(engine_config(64, 24), "tree chunked", 6, kTree);
}

TEST_F(EngineSpeculativeTest, NgramTreeDraftsGiveThePlainTokensUnderPreemption) {
  expect_speculation_changes_no_token(engine_config(14, 64), "tree preemption", 6, kTree);
}

}  // namespace
}  // namespace lemma::testing
