// Prefill/decode disaggregation at the engine level (G24): a prompt computed by one engine, its full
// blocks exported and filed in another engine's prefix cache, continues there exactly as a third
// engine that computed everything itself (tokens and logits bitwise), starting as a prefix hit; only
// the blocks the receiver lacks travel; a receiver without room computes the prompt itself.
#include <gtest/gtest.h>

#include "unit/engine/engine_fixture.h"

namespace lemma::testing {
namespace {

constexpr int32_t kBlocks = 64;

// Runs one greedy request on `engine` and returns it.
Finished run_one(Engine& engine, RequestId id, const std::vector<int32_t>& prompt, int64_t max_tokens) {
  engine.add_request(id, prompt, greedy(max_tokens));
  return run_to_completion(engine).at(id);
}

TEST(EngineHandoff, ImportedPromptContinuesExactly) {
  LEMMA_REQUIRE_SHARED(stories_path());
  const std::vector<int32_t> prompt = prompt_of(71, 7);  // 4 full blocks of 16, 7 tokens over
  Engine prefill(stories_model(), engine_config(kBlocks));
  run_one(prefill, 1, prompt, 1);
  KvHandoff handoff = prefill.export_prefix(prompt, {}, 0);
  EXPECT_EQ(handoff.first_block, 0);
  EXPECT_EQ(handoff.num_blocks(), 4);
  EXPECT_EQ(handoff.token_ids.size(), 64u);
  EXPECT_EQ(handoff.bytes(), 64 * KvCache::kv_cache_bytes_per_token(stories_model().config().num_layers,
                                                                    stories_model().config().num_kv_heads,
                                                                    stories_model().config().head_dim, KvDtype::kF32));

  Engine decode(stories_model(), engine_config(kBlocks));
  EXPECT_EQ(decode.num_cached_prefix_blocks(prompt, {}), 0);
  EXPECT_EQ(decode.import_prefix(handoff), 4);
  EXPECT_EQ(decode.num_cached_prefix_blocks(prompt, {}), 4);
  decode.scheduler().check_invariants();
  const Finished handed = run_one(decode, 9, prompt, 40);

  Engine colocated(stories_model(), engine_config(kBlocks));
  const Finished plain = run_one(colocated, 9, prompt, 40);
  EXPECT_EQ(handed.cached_tokens, 64) << "the request starts as a prefix hit on the imported blocks";
  EXPECT_EQ(plain.cached_tokens, 0);
  EXPECT_EQ(handed.tokens, plain.tokens);
  EXPECT_EQ(handed.logits, plain.logits) << "imported K/V is bitwise the K/V computed in place";
}

TEST(EngineHandoff, OnlyTheMissingSuffixTravels) {
  LEMMA_REQUIRE_SHARED(stories_path());
  const std::vector<int32_t> shared = prompt_of(32, 3);  // two blocks both engines compute
  std::vector<int32_t> prompt = shared;
  const std::vector<int32_t> tail = prompt_of(40, 4);
  prompt.insert(prompt.end(), tail.begin(), tail.end());  // 72 tokens: 4 full blocks

  Engine prefill(stories_model(), engine_config(kBlocks));
  run_one(prefill, 1, prompt, 1);
  Engine decode(stories_model(), engine_config(kBlocks));
  run_one(decode, 1, shared, 1);  // the decode engine already computed (and cached) the shared two blocks
  const int32_t held = decode.num_cached_prefix_blocks(prompt, {});
  ASSERT_EQ(held, 2);
  KvHandoff handoff = prefill.export_prefix(prompt, {}, held);
  EXPECT_EQ(handoff.first_block, 2);
  EXPECT_EQ(handoff.num_blocks(), 2) << "only blocks 2 and 3 travel";
  EXPECT_EQ(decode.import_prefix(handoff), 2);
  const Finished handed = run_one(decode, 5, prompt, 30);

  Engine colocated(stories_model(), engine_config(kBlocks));
  const Finished plain = run_one(colocated, 5, prompt, 30);
  EXPECT_EQ(handed.cached_tokens, 64);
  EXPECT_EQ(handed.tokens, plain.tokens);
  EXPECT_EQ(handed.logits, plain.logits);
}

TEST(EngineHandoff, ReceiverWithoutRoomOrPrefixComputesItself) {
  LEMMA_REQUIRE_SHARED(stories_path());
  const std::vector<int32_t> prompt = prompt_of(70, 11);
  Engine prefill(stories_model(), engine_config(kBlocks));
  run_one(prefill, 1, prompt, 1);

  // The handoff claims the receiver holds block 0, which it does not: nothing is filed.
  KvHandoff skips_first = prefill.export_prefix(prompt, {}, 1);
  Engine decode(stories_model(), engine_config(kBlocks));
  EXPECT_EQ(decode.import_prefix(skips_first), 0);
  EXPECT_EQ(decode.num_cached_prefix_blocks(prompt, {}), 0);

  // A receiver whose every block is held by a running request has no room.
  Engine busy(stories_model(), engine_config(6));
  busy.add_request(3, prompt_of(90, 12), greedy(2));  // holds all 6 blocks once prefilled
  busy.step();
  KvHandoff all = prefill.export_prefix(prompt, {}, 0);
  EXPECT_EQ(busy.import_prefix(all), 0);
  busy.scheduler().check_invariants();
  run_to_completion(busy);

  // Different extra keys (another adapter) are another namespace: nothing held there.
  const std::vector<uint64_t> adapter{42};
  EXPECT_EQ(prefill.export_prefix(prompt, adapter, 0).num_blocks(), 0);
}

}  // namespace
}  // namespace lemma::testing
