// KvManager's side of prefill/decode disaggregation (G24): blocks computed elsewhere filed in the
// prefix cache become an ordinary prefix hit; held blocks are not taken twice nor evicted while the
// import allocates; a pool without room changes nothing.
#include <gtest/gtest.h>

#include <numeric>

#include "lemma/kv/kv_manager.h"

namespace lemma {
namespace {

std::vector<int32_t> tokens(int n, int start = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

KvManagerConfig config(int32_t blocks) {
  KvManagerConfig c;
  c.num_device_blocks = blocks;
  c.block_size = 4;
  c.watermark = 0.0;
  return c;
}

TEST(KvImport, ImportedBlocksAreAPrefixHit) {
  KvManager kv(config(8));
  const std::vector<int32_t> prompt = tokens(14);  // 3 full blocks
  const auto targets = kv.begin_import(prompt, {}, 3);
  ASSERT_TRUE(targets);
  ASSERT_EQ(targets->size(), 3u);
  for (BlockId b : *targets) EXPECT_GE(b, 0);
  EXPECT_EQ(kv.num_free_blocks(), 5) << "held while the caller fills them";
  kv.finish_import(*targets);
  EXPECT_EQ(kv.num_free_blocks(), 8) << "then free, cached and evictable";
  kv.check_invariants();
  EXPECT_EQ(kv.cached_prefix_blocks(prompt, {}), *targets);
  const PrefixHit hit = kv.find_cached_prefix(prompt, {});
  EXPECT_EQ(hit.num_tokens, 12);
  EXPECT_EQ(hit.blocks, *targets);
  // Another namespace (adapter) sees nothing.
  const std::vector<uint64_t> adapter{7};
  EXPECT_TRUE(kv.cached_prefix_blocks(prompt, adapter).empty());
}

TEST(KvImport, HeldBlocksAreSkippedAndKeptWhileAllocating) {
  KvManager kv(config(4));
  const std::vector<int32_t> prompt = tokens(16);
  auto first = kv.begin_import(prompt, {}, 2);
  ASSERT_TRUE(first);
  kv.finish_import(*first);
  // All 4 blocks free (2 of them cached); importing blocks 0..3 needs 2 new ones and must not evict
  // blocks 0 and 1 to get them.
  const auto second = kv.begin_import(prompt, {}, 4);
  ASSERT_TRUE(second);
  EXPECT_EQ((*second)[0], -1);
  EXPECT_EQ((*second)[1], -1);
  EXPECT_GE((*second)[2], 0);
  EXPECT_GE((*second)[3], 0);
  kv.finish_import(*second);
  kv.check_invariants();
  EXPECT_EQ(kv.cached_prefix_blocks(prompt, {}).size(), 4u);
}

TEST(KvImport, NoRoomChangesNothing) {
  KvManager kv(config(3));
  ASSERT_TRUE(kv.allocate_slots(1, 0, 8));  // a live sequence holds 2 of the 3 blocks
  const std::vector<int32_t> prompt = tokens(12, 100);
  EXPECT_FALSE(kv.begin_import(prompt, {}, 3));
  EXPECT_EQ(kv.num_free_blocks(), 1);
  EXPECT_TRUE(kv.cached_prefix_blocks(prompt, {}).empty());
  EXPECT_FALSE(kv.begin_import(prompt, {}, 4)) << "more blocks than the tokens have";
  kv.check_invariants();

  KvManagerConfig off = config(8);
  off.enable_prefix_caching = false;
  KvManager no_cache(off);
  EXPECT_FALSE(no_cache.begin_import(prompt, {}, 1));
}

}  // namespace
}  // namespace lemma
