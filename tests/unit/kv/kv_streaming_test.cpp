// KvManager::drop_streaming_blocks (attention sinks, G10): the blocks wholly inside the evicted
// middle [S, c - W + 1) go back to the pool as the stream moves on, the sinks' blocks stay; swap,
// free and the invariants handle a table whose dropped entries sit in the middle; such a sequence
// is never registered in the prefix cache nor forked. Hand-computed with block size 4.
#include <numeric>

#include <gtest/gtest.h>

#include "lemma/kv/kv_manager.h"

namespace lemma {
namespace {

KvManagerConfig config(int32_t blocks, int32_t host_blocks = 0) {
  KvManagerConfig c;
  c.num_device_blocks = blocks;
  c.block_size = 4;
  c.num_host_blocks = host_blocks;
  c.watermark = 0.0;
  return c;
}

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
  KvManager kv(config(16));
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
  KvManager kv(config(16, 8));
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
  KvManager kv(config(16));
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
  KvManagerConfig c = config(8);
  c.sliding_window = 4;
  KvManager kv(c);
  ASSERT_TRUE(kv.allocate_slots(1, 0, 4));
  EXPECT_THROW(kv.drop_streaming_blocks(1, 4, {2, 4}), std::logic_error);
}

}  // namespace
}  // namespace lemma
