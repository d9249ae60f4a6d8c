#include "lemma/kv/kv_manager.h"

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

}  // namespace
}  // namespace lemma
