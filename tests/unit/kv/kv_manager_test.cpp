#include "lemma/kv/kv_manager.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <gtest/gtest.h>

namespace lemma {
namespace {

std::vector<int32_t> iota_tokens(int n, int start = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

KvManagerConfig small_config(int32_t blocks, int32_t host_blocks = 0) {
  KvManagerConfig c;
  c.num_device_blocks = blocks;
  c.block_size = 4;
  c.num_host_blocks = host_blocks;
  c.watermark = 0.0;
  return c;
}

TEST(KvManager, GrowsTablesBlockByBlock) {
  KvManager kv(small_config(8));
  auto a = kv.allocate_slots(1, 0, 5);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->new_blocks.size(), 2u);
  EXPECT_EQ(kv.block_table(1).size(), 2u);
  a = kv.allocate_slots(1, 5, 3);  // positions 5..7 still in block 1
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->new_blocks.empty());
  a = kv.allocate_slots(1, 8, 1);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->new_blocks.size(), 1u);
  EXPECT_EQ(kv.num_free_blocks(), 5);
  kv.check_invariants();
  EXPECT_TRUE(kv.free(1));
  EXPECT_FALSE(kv.free(1));  // idempotent
  EXPECT_EQ(kv.num_free_blocks(), 8);
  kv.check_invariants();
}

TEST(KvManager, FailedAllocationChangesNothing) {
  KvManager kv(small_config(3));
  ASSERT_TRUE(kv.allocate_slots(1, 0, 8));
  EXPECT_FALSE(kv.allocate_slots(2, 0, 8));
  EXPECT_FALSE(kv.contains(2));
  EXPECT_FALSE(kv.allocate_slots(1, 8, 5));
  EXPECT_EQ(kv.block_table(1).size(), 2u);
  EXPECT_EQ(kv.num_free_blocks(), 1);
  kv.check_invariants();
}

TEST(KvManager, WatermarkAppliesToAdmissionOnly) {
  KvManagerConfig c = small_config(10);
  c.watermark = 0.2;  // 2 blocks
  KvManager kv(c);
  EXPECT_EQ(kv.watermark_blocks(), 2);
  EXPECT_FALSE(kv.allocate_slots(1, 0, 36, nullptr, /*admission=*/true));  // 9 blocks leave 1 < 2
  ASSERT_TRUE(kv.allocate_slots(1, 0, 32, nullptr, true));                 // 8 blocks leave 2
  EXPECT_TRUE(kv.allocate_slots(1, 32, 4, nullptr, false));                // growth may dip into it
}

TEST(KvManager, PrefixHitReusesBlocksAndLeavesOneTokenToCompute) {
  KvManager kv(small_config(16));
  const auto prompt = iota_tokens(12);
  PrefixHit miss = kv.find_cached_prefix(prompt, {});
  EXPECT_EQ(miss.num_tokens, 0);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 12, &miss, true));
  kv.cache_computed_blocks(1, prompt, 12, {});
  EXPECT_EQ(kv.prefix_cache().num_cached_blocks(), 3);

  // Same 12-token prompt: only 2 blocks hit (the last token must be computed).
  PrefixHit hit = kv.find_cached_prefix(prompt, {});
  EXPECT_EQ(hit.num_tokens, 8);
  ASSERT_TRUE(kv.allocate_slots(2, 8, 4, &hit, true));
  EXPECT_EQ(kv.block_table(2)[0], kv.block_table(1)[0]);
  EXPECT_EQ(kv.block_table(2)[1], kv.block_table(1)[1]);
  EXPECT_NE(kv.block_table(2)[2], kv.block_table(1)[2]);
  EXPECT_EQ(kv.device_pool().ref_count(kv.block_table(1)[0]), 2);
  kv.check_invariants();

  // Freed, the blocks stay cached; a later request revives them.
  kv.free(1);
  kv.free(2);
  EXPECT_EQ(kv.num_free_blocks(), 16);
  auto longer = prompt;
  longer.push_back(100);
  PrefixHit again = kv.find_cached_prefix(longer, {});
  EXPECT_EQ(again.num_tokens, 12);
  EXPECT_EQ(kv.num_blocks_needed(3, 12, 1, &again), 3 + 1);  // 3 revived + 1 new
  ASSERT_TRUE(kv.allocate_slots(3, 12, 1, &again, true));
  EXPECT_EQ(kv.num_free_blocks(), 12);
  EXPECT_EQ(kv.num_prefix_queries(), 3u);
  EXPECT_EQ(kv.num_prefix_hits(), 2u);
  EXPECT_EQ(kv.num_prefix_hit_tokens(), 20u);
  kv.check_invariants();
}

TEST(KvManager, PrefixCachingCanBeDisabled) {
  KvManagerConfig c = small_config(8);
  c.enable_prefix_caching = false;
  KvManager kv(c);
  const auto prompt = iota_tokens(9);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 9));
  kv.cache_computed_blocks(1, prompt, 9, {});
  EXPECT_EQ(kv.find_cached_prefix(prompt, {}).num_tokens, 0);
  EXPECT_EQ(kv.prefix_cache().num_cached_blocks(), 0);
}

TEST(KvManager, ForkSharesBlocksAndCopiesOnWrite) {
  KvManager kv(small_config(8));
  ASSERT_TRUE(kv.allocate_slots(1, 0, 6));  // blocks A (full) and B (half)
  const std::vector<BlockId> parent(kv.block_table(1).begin(), kv.block_table(1).end());
  kv.fork(1, 2);
  EXPECT_EQ(kv.device_pool().ref_count(parent[1]), 2);
  EXPECT_EQ(kv.num_blocks_needed(2, 6, 1), 1);  // writing position 6 copies B
  auto a = kv.allocate_slots(2, 6, 1);
  ASSERT_TRUE(a);
  ASSERT_EQ(a->replaced.size(), 1u);
  EXPECT_EQ(a->replaced[0].index, 1);
  EXPECT_EQ(a->replaced[0].copy.src, parent[1]);
  EXPECT_EQ(a->replaced[0].copy.dst, kv.block_table(2)[1]);
  EXPECT_EQ(kv.block_table(2)[0], parent[0]);  // the full prompt block stays shared
  // The parent now owns B alone: its next write copies nothing.
  a = kv.allocate_slots(1, 6, 1);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->replaced.empty());
  kv.check_invariants();
  kv.free(1);
  kv.free(2);
  EXPECT_EQ(kv.num_free_blocks(), 8);
  kv.check_invariants();
}

// Found by the random test: a fork shares a cached full block mid-way; once the parent lets go, the
// child owns it alone and overwrites its tail, so the block must leave the prefix cache.
TEST(KvManager, WritingASoleOwnedCachedBlockDropsItFromTheCache) {
  KvManager kv(small_config(8));
  const auto tokens = iota_tokens(8);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 8));
  kv.cache_computed_blocks(1, tokens, 8, {});
  const BlockId second = kv.block_table(1)[1];
  EXPECT_TRUE(kv.device_pool().is_cached(second));
  kv.fork(1, 2, 6);  // the child keeps positions 0..5; block 1 is shared
  EXPECT_EQ(kv.block_table(2).size(), 2u);
  kv.free(1);
  const auto a = kv.allocate_slots(2, 6, 1);  // overwrites position 6 of block 1
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->replaced.empty());
  EXPECT_FALSE(kv.device_pool().is_cached(second));
  auto other = tokens;
  other.push_back(0);
  EXPECT_EQ(kv.find_cached_prefix(other, {}).num_tokens, 4);  // only block 0 still hits
  kv.check_invariants();
}

TEST(KvManager, SwapOutAndInMovesBlocksBetweenTiers) {
  KvManager kv(small_config(4, 3));
  ASSERT_TRUE(kv.allocate_slots(1, 0, 10));  // 3 blocks
  const std::vector<BlockId> device(kv.block_table(1).begin(), kv.block_table(1).end());
  ASSERT_TRUE(kv.can_swap_out(1));
  const auto out = kv.swap_out(1);
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out[i].src, device[i]);
  EXPECT_TRUE(kv.is_swapped(1));
  EXPECT_TRUE(kv.block_table(1).empty());
  EXPECT_EQ(kv.num_free_blocks(), 4);
  EXPECT_EQ(kv.num_free_host_blocks(), 0);
  EXPECT_THROW(kv.allocate_slots(1, 10, 1), std::logic_error);
  kv.check_invariants();

  ASSERT_TRUE(kv.allocate_slots(2, 0, 8));  // 2 blocks: 2 left, not enough to swap 1 back in
  EXPECT_FALSE(kv.can_swap_in(1));
  kv.free(2);
  ASSERT_TRUE(kv.can_swap_in(1, 1));
  const auto in = kv.swap_in(1);
  ASSERT_EQ(in.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(in[i].src, out[i].dst);
    EXPECT_EQ(in[i].dst, kv.block_table(1)[i]);
  }
  EXPECT_EQ(kv.num_free_host_blocks(), 3);
  kv.check_invariants();
}

TEST(KvManager, SwapOutNeedsHostRoom) {
  KvManager kv(small_config(4, 1));
  ASSERT_TRUE(kv.allocate_slots(1, 0, 8));
  EXPECT_FALSE(kv.can_swap_out(1));
  EXPECT_THROW(kv.swap_out(1), std::logic_error);
  EXPECT_FALSE(kv.is_swapped(1));
  kv.check_invariants();
}

// Sliding window 6, blocks of 4: a forward from c computed tokens reads positions >= c - 5, so the
// blocks wholly before that are dropped (entries kNoBlock) and go back to the pool.
KvManagerConfig window_config(int32_t blocks, int32_t host_blocks = 0) {
  KvManagerConfig c = small_config(blocks, host_blocks);
  c.sliding_window = 6;
  return c;
}

TEST(KvManager, DropsBlocksWhollyBeforeTheWindow) {
  KvManager kv(window_config(8));
  EXPECT_EQ(kv.first_live_position(5), 0);
  EXPECT_EQ(kv.first_live_position(12), 7);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 12));  // 3 blocks, positions 0..11
  const std::vector<BlockId> table(kv.block_table(1).begin(), kv.block_table(1).end());
  std::vector<int32_t> dropped;
  EXPECT_EQ(kv.drop_dead_blocks(1, 7, &dropped), 0);  // reads from position 2: block 0 is live
  EXPECT_EQ(kv.drop_dead_blocks(1, 12, &dropped), 1);  // reads from 7: block 0 (0..3) is dead, block 1 not
  EXPECT_EQ(dropped, std::vector<int32_t>{0});
  EXPECT_EQ(kv.drop_dead_blocks(1, 12, &dropped), 0);  // idempotent
  EXPECT_EQ(kv.block_table(1)[0], kNoBlock);
  EXPECT_EQ(kv.block_table(1)[1], table[1]);
  EXPECT_EQ(kv.device_pool().ref_count(table[0]), 0);
  EXPECT_EQ(kv.num_held_blocks(1), 2);
  EXPECT_EQ(kv.num_table_blocks(1), 3);
  EXPECT_EQ(kv.num_free_blocks(), 6);
  ASSERT_TRUE(kv.allocate_slots(1, 12, 1));  // growth appends after the dropped prefix
  EXPECT_EQ(kv.drop_dead_blocks(1, 13, &dropped), 1);  // reads from 8: block 1 (4..7) is dead
  EXPECT_EQ(dropped, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(kv.num_held_blocks(1), 2);
  kv.check_invariants();
  EXPECT_TRUE(kv.free(1));
  EXPECT_EQ(kv.num_free_blocks(), 8);
  kv.check_invariants();
}

TEST(KvManager, WithoutAWindowNothingIsDropped) {
  KvManager kv(small_config(8));
  ASSERT_TRUE(kv.allocate_slots(1, 0, 20));
  EXPECT_EQ(kv.drop_dead_blocks(1, 20), 0);
  EXPECT_EQ(kv.first_live_position(20), 0);
  EXPECT_EQ(kv.max_live_blocks(1000, 1), 250);
}

TEST(KvManager, MaxLiveBlocksIsTheWorstSpanOfWindowAndStep) {
  const KvManager kv(window_config(8));
  // Brute force: a step of n tokens from c holds blocks first_live_position(c) / 4 .. (c + n - 1) / 4.
  for (int64_t n : {1, 3, 8}) {
    int32_t worst = 0;
    for (int64_t c = 0; c + n <= 200; ++c)
      worst = std::max(worst, static_cast<int32_t>((c + n - 1) / 4 - kv.first_live_position(c) / 4 + 1));
    EXPECT_EQ(kv.max_live_blocks(200, n), worst) << "step " << n;
  }
  EXPECT_EQ(kv.max_live_blocks(5, 1), 2);  // a short sequence never holds more than its blocks
}

// A dropped block keeps its prefix-cache entry (its K/V is intact) until the pool hands it out again;
// then lookups no longer find it.
TEST(KvManager, DroppedCachedBlocksHitUntilEvicted) {
  KvManager kv(window_config(5));
  auto tokens = iota_tokens(13);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 12));
  kv.cache_computed_blocks(1, tokens, 12, {});
  const BlockId first = kv.block_table(1)[0];
  ASSERT_EQ(kv.drop_dead_blocks(1, 12), 1);
  EXPECT_TRUE(kv.device_pool().is_cached(first));
  EXPECT_EQ(kv.find_cached_prefix(tokens, {}).num_tokens, 12);
  // A hit never takes the blocks before its window: block 0 stays free.
  PrefixHit hit = kv.find_cached_prefix(tokens, {});
  EXPECT_EQ(kv.num_blocks_needed(2, 12, 1, &hit), 1);  // block 0 skipped, blocks 1-2 shared, block 3 new
  ASSERT_TRUE(kv.allocate_slots(2, 12, 1, &hit, true));
  EXPECT_EQ(kv.block_table(2)[0], kNoBlock);
  EXPECT_EQ(kv.block_table(2)[1], kv.block_table(1)[1]);
  EXPECT_EQ(kv.device_pool().ref_count(first), 0);
  kv.check_invariants();
  // Two more blocks exhaust the free list: the cached dropped block is evicted and reused.
  ASSERT_TRUE(kv.allocate_slots(3, 0, 8));
  EXPECT_FALSE(kv.device_pool().is_cached(first));
  EXPECT_EQ(kv.find_cached_prefix(tokens, {}).num_tokens, 0);  // block 0's content is gone
  kv.check_invariants();
}

TEST(KvManager, SwapMovesOnlyHeldBlocks) {
  KvManager kv(window_config(6, 2));
  ASSERT_TRUE(kv.allocate_slots(1, 0, 12));
  ASSERT_EQ(kv.drop_dead_blocks(1, 12), 1);
  const std::vector<BlockId> device(kv.block_table(1).begin(), kv.block_table(1).end());
  ASSERT_TRUE(kv.can_swap_out(1));  // 2 held blocks fit the 2 host blocks
  const auto out = kv.swap_out(1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].src, device[1]);
  EXPECT_EQ(out[1].src, device[2]);
  EXPECT_EQ(kv.num_free_blocks(), 6);
  kv.check_invariants();
  ASSERT_TRUE(kv.can_swap_in(1, 4));
  EXPECT_FALSE(kv.can_swap_in(1, 5));
  const auto in = kv.swap_in(1);
  ASSERT_EQ(in.size(), 2u);
  const auto table = kv.block_table(1);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0], kNoBlock);
  EXPECT_EQ(in[0].dst, table[1]);
  EXPECT_EQ(in[1].dst, table[2]);
  kv.check_invariants();
}

TEST(KvManager, ForkNeedsTheBlocksTheChildReads) {
  KvManager kv(window_config(8));
  ASSERT_TRUE(kv.allocate_slots(1, 0, 16));
  ASSERT_EQ(kv.drop_dead_blocks(1, 14), 2);  // reads from 9: blocks 0 and 1 dropped
  EXPECT_FALSE(kv.can_fork(1, 11));          // a child at 11 reads from 6, in dropped block 1
  EXPECT_THROW(kv.fork(1, 2, 11), std::logic_error);
  EXPECT_FALSE(kv.contains(2));
  ASSERT_TRUE(kv.can_fork(1, 13));  // reads from 8: block 2 on
  kv.fork(1, 2, 13);
  const auto child = kv.block_table(2);
  ASSERT_EQ(child.size(), 4u);
  EXPECT_EQ(child[1], kNoBlock);
  EXPECT_EQ(child[2], kv.block_table(1)[2]);
  EXPECT_EQ(kv.device_pool().ref_count(child[2]), 2);
  kv.check_invariants();
}

// Attention sinks (G10): KvManager::drop_streaming_blocks frees the blocks wholly inside the
// evicted middle [S, c - W + 1) as the stream moves on and keeps the sinks' blocks; swap, free and
// the invariants handle dropped entries in the middle; such a sequence is never registered in the
// prefix cache nor forked. Hand-computed with block size 4.
TEST(StreamingWindow, HandComputedPositions) {
  const StreamingWindow w{4, 60};
  EXPECT_EQ(w.first_window_key(10), 4);    // everything is attended before S + W
  EXPECT_EQ(w.first_window_key(100), 41);  // 100 - 60 + 1
  EXPECT_EQ(w.sink_query_position(10), 10);
  EXPECT_EQ(w.sink_query_position(100), 63);  // the last cache slot
  EXPECT_EQ(w.sink_pass_keys(50), 0);         // the window of 60 still reaches position 0
  EXPECT_EQ(w.sink_pass_keys(62), 3);         // keys 0..2 fall outside [3, 62]
  EXPECT_EQ(w.sink_pass_keys(100), 4);
  EXPECT_EQ(w.first_dead_block(16), 1);
  EXPECT_EQ(w.dead_block_end(100, 16), 2);  // positions [4, 41): block 1 = [16, 32) wholly inside
  EXPECT_EQ(w.max_live_blocks(16, 1), 6);   // 1 + (59 + 15) / 16 + 1
  EXPECT_TRUE(streaming_window_error(w, 512).empty());
  EXPECT_EQ(streaming_window_error({4, 0}, 512), "attention_sinks 4 needs streaming_window >= 1");
  EXPECT_EQ(streaming_window_error({4, -3}, 512), "streaming_window must be >= 1, got -3");
  EXPECT_EQ(streaming_window_error({-1, 8}, 512), "attention_sinks must be >= 0, got -1");
  EXPECT_EQ(streaming_window_error({4, 509}, 512),
            "attention_sinks + streaming_window = 513 exceeds the context of 512 tokens");
}

TEST(KvStreaming, DropsTheMiddleAndKeepsTheSinks) {
  KvManager kv(small_config(16));
  const StreamingWindow w{2, 6};  // sinks in block 0, a window of 6 positions
  std::vector<int32_t> dropped;
  int64_t c = 0;
  int32_t max_held = 0;
  for (; c < 40; ++c) {  // one token per step, as decoding does
    kv.drop_streaming_blocks(1, c, w, &dropped);
    ASSERT_TRUE(kv.allocate_slots(1, c, 1));
    max_held = std::max(max_held, kv.num_held_blocks(1));
    kv.check_invariants();
  }
  // From c = 39 the window starts at 34: blocks 1..7 ([4, 32)) are wholly inside [2, 34).
  const auto table = kv.block_table(1);
  ASSERT_EQ(table.size(), 10u);
  EXPECT_NE(table[0], kNoBlock);
  for (size_t i = 1; i < 8; ++i) EXPECT_EQ(table[i], kNoBlock) << i;
  EXPECT_NE(table[8], kNoBlock);
  EXPECT_NE(table[9], kNoBlock);
  EXPECT_EQ(dropped, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(kv.num_held_blocks(1), 3);
  EXPECT_LE(max_held, w.max_live_blocks(4, 1));
  EXPECT_EQ(kv.num_free_blocks(), 13);
  EXPECT_TRUE(kv.free(1));
  EXPECT_EQ(kv.num_free_blocks(), 16);
  kv.check_invariants();
}

TEST(KvStreaming, SwapKeepsTheDroppedMiddle) {
  KvManager kv(small_config(16, 8));
  const StreamingWindow w{4, 4};
  ASSERT_TRUE(kv.allocate_slots(1, 0, 24));
  EXPECT_EQ(kv.drop_streaming_blocks(1, 24, w), 4);  // [4, 21): blocks 1..4
  const std::vector<BlockId> before(kv.block_table(1).begin(), kv.block_table(1).end());
  const auto out = kv.swap_out(1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].src, before[0]);
  EXPECT_EQ(out[1].src, before[5]);
  kv.check_invariants();
  const auto in = kv.swap_in(1);
  ASSERT_EQ(in.size(), 2u);
  const auto after = kv.block_table(1);
  for (size_t i = 1; i < 5; ++i) EXPECT_EQ(after[i], kNoBlock);
  EXPECT_EQ(after[0], in[0].dst);
  EXPECT_EQ(after[5], in[1].dst);
  kv.check_invariants();
}

TEST(KvStreaming, NeverCachedNorForked) {
  KvManager kv(small_config(16));
  std::vector<int32_t> tokens(16);
  std::iota(tokens.begin(), tokens.end(), 0);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 16));
  kv.drop_streaming_blocks(1, 0, {4, 8});
  kv.cache_computed_blocks(1, tokens, 16, {});
  EXPECT_TRUE(kv.find_cached_prefix(tokens, {}).blocks.empty());
  EXPECT_FALSE(kv.can_fork(1, 8));
  EXPECT_FALSE(kv.can_fork(1, -1));
}

TEST(KvStreaming, RefusedWithASlidingWindow) {
  KvManagerConfig c = small_config(8);
  c.sliding_window = 4;
  KvManager kv(c);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 4));
  EXPECT_THROW(kv.drop_streaming_blocks(1, 4, {2, 4}), std::logic_error);
}

}  // namespace
}  // namespace lemma
