#include "lemma/kv/prefix_cache.h"

#include <numeric>
#include <set>

#include <gtest/gtest.h>

namespace lemma {
namespace {

std::vector<int32_t> iota_tokens(int n, int start = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

TEST(BlockHash, DependsOnParentTokensAndExtraKeys) {
  const auto tokens = iota_tokens(4);
  const uint64_t adapter = 3;
  const BlockHash base = hash_block(kRootBlockHash, tokens, {});
  EXPECT_EQ(base, hash_block(kRootBlockHash, tokens, {}));
  EXPECT_NE(base, hash_block(BlockHash{1, 2}, tokens, {}));
  EXPECT_NE(base, hash_block(kRootBlockHash, iota_tokens(4, 1), {}));
  EXPECT_NE(base, hash_block(kRootBlockHash, tokens, std::span<const uint64_t>(&adapter, 1)));
  EXPECT_NE(base.lo, base.hi);
}

TEST(BlockHash, NoCollisionsAmongManySmallBlocks) {
  std::set<std::pair<uint64_t, uint64_t>> seen;
  std::set<uint64_t> seen_lo;
  for (int32_t a = 0; a < 200; ++a)
    for (int32_t b = 0; b < 200; ++b) {
      const std::vector<int32_t> t{a, b};
      const BlockHash h = hash_block(kRootBlockHash, t, {});
      EXPECT_TRUE(seen.insert({h.lo, h.hi}).second);
      EXPECT_TRUE(seen_lo.insert(h.lo).second);  // each lane alone is collision-free here too
    }
}

TEST(PrefixCache, FindsLongestCachedPrefixAndChecksTokens) {
  BlockPool pool(8);
  PrefixCache cache(pool, 4);
  const auto tokens = iota_tokens(12);
  std::vector<BlockHash> hashes;
  cache.extend_hashes(tokens, {}, hashes);
  ASSERT_EQ(hashes.size(), 3u);
  const auto blocks = pool.allocate(3);
  EXPECT_TRUE(cache.insert(blocks[0], hashes[0], std::span(tokens).first(4)));
  EXPECT_TRUE(cache.insert(blocks[1], hashes[1], std::span(tokens).subspan(4, 4)));
  EXPECT_FALSE(cache.insert(blocks[2], hashes[1], std::span(tokens).subspan(4, 4)));  // content already cached
  EXPECT_EQ(cache.find(hashes, tokens), (std::vector<BlockId>{blocks[0], blocks[1]}));

  // Same first block, different second: the chain stops after one block.
  auto other = tokens;
  other[5] = 99;
  std::vector<BlockHash> other_hashes;
  cache.extend_hashes(other, {}, other_hashes);
  EXPECT_EQ(other_hashes[0], hashes[0]);
  EXPECT_EQ(cache.find(other_hashes, other), std::vector<BlockId>{blocks[0]});

  // A forced "collision" (the original hashes, other tokens) is a miss from the differing block on.
  EXPECT_EQ(cache.find(hashes, other).size(), 1u);

  // Extra keys (adapter id) give a different chain: no hit.
  const uint64_t adapter = 42;
  std::vector<BlockHash> adapter_hashes;
  cache.extend_hashes(tokens, std::span<const uint64_t>(&adapter, 1), adapter_hashes);
  EXPECT_TRUE(cache.find(adapter_hashes, tokens).empty());
  cache.check_invariants();
}

TEST(PrefixCache, UnreferencedBlocksStayUntilEvicted) {
  BlockPool pool(2);
  PrefixCache cache(pool, 2);
  const auto tokens = iota_tokens(2);
  std::vector<BlockHash> hashes;
  cache.extend_hashes(tokens, {}, hashes);
  const BlockId b = pool.allocate(1)[0];
  cache.insert(b, hashes[0], tokens);
  pool.free(b);
  EXPECT_EQ(cache.lookup(hashes[0]), b);  // still cached while free
  cache.check_invariants();
  pool.allocate(1);  // takes the uncached block first
  EXPECT_EQ(cache.lookup(hashes[0]), b);
  pool.allocate(1);  // now evicts
  EXPECT_EQ(cache.lookup(hashes[0]), -1);
  EXPECT_EQ(cache.num_cached_blocks(), 0);
  cache.check_invariants();
}

}  // namespace
}  // namespace lemma
