#include "lemma/kv/block_pool.h"

#include <random>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

namespace lemma {
namespace {

TEST(BlockPool, AllocatesDistinctBlocksUntilEmpty) {
  BlockPool pool(8);
  EXPECT_EQ(pool.num_free_blocks(), 8);
  const auto a = pool.allocate(5);
  const auto b = pool.allocate(3);
  std::set<BlockId> all(a.begin(), a.end());
  all.insert(b.begin(), b.end());
  EXPECT_EQ(all.size(), 8u);
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_FALSE(pool.can_allocate(1));
  for (BlockId x : all) EXPECT_EQ(pool.ref_count(x), 1);
  pool.check_invariants();
}

TEST(BlockPool, FailedAllocationChangesNothing) {
  BlockPool pool(4);
  const auto a = pool.allocate(3);
  EXPECT_FALSE(pool.can_allocate(2));
  EXPECT_THROW(pool.allocate(2), std::logic_error);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.check_invariants();
  EXPECT_EQ(pool.allocate(1).size(), 1u);
}

TEST(BlockPool, RefCountsAndDoubleFree) {
  BlockPool pool(2);
  const BlockId b = pool.allocate(1)[0];
  pool.add_ref(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.free(b);
  EXPECT_EQ(pool.num_free_blocks(), 1);
  pool.free(b);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_THROW(pool.free(b), std::logic_error);
  EXPECT_THROW(pool.free(7), std::logic_error);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  pool.check_invariants();
}

TEST(BlockPool, UncachedBlocksAreReusedBeforeCachedOnesWhichGoLru) {
  BlockPool pool(4);
  std::vector<BlockId> evicted;
  pool.set_eviction_listener([&](BlockId b) { evicted.push_back(b); });
  const auto blocks = pool.allocate(4);
  pool.set_cached(blocks[0], true);
  pool.set_cached(blocks[1], true);
  pool.free(blocks[1]);  // cached, freed first: least recently used
  pool.free(blocks[0]);  // cached
  pool.free(blocks[2]);  // uncached
  pool.check_invariants();
  EXPECT_EQ(pool.allocate(1)[0], blocks[2]);
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(pool.allocate(1)[0], blocks[1]);
  EXPECT_EQ(evicted, std::vector<BlockId>{blocks[1]});
  EXPECT_FALSE(pool.is_cached(blocks[1]));
  // Reviving a cached free block takes it off the free list without eviction.
  pool.add_ref(blocks[0]);
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_EQ(evicted.size(), 1u);
  pool.check_invariants();
}

TEST(BlockPool, RandomOperationsKeepInvariants) {
  std::mt19937 rng(7);
  BlockPool pool(32);
  std::vector<BlockId> held;  // one entry per reference
  for (int step = 0; step < 5000; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op == 0 && pool.can_allocate(2)) {
      for (BlockId b : pool.allocate(2)) held.push_back(b);
    } else if (op == 1 && !held.empty()) {
      const BlockId b = held[rng() % held.size()];
      pool.add_ref(b);
      held.push_back(b);
    } else if (op == 2 && !held.empty()) {
      const size_t i = rng() % held.size();
      pool.free(held[i]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op == 3 && !held.empty()) {
      pool.set_cached(held[rng() % held.size()], true);
    }
    pool.check_invariants();
    std::set<BlockId> distinct(held.begin(), held.end());
    ASSERT_EQ(pool.num_used_blocks(), static_cast<int32_t>(distinct.size()));
  }
  for (BlockId b : held) pool.free(b);
  EXPECT_EQ(pool.num_free_blocks(), 32);
  pool.check_invariants();
}

}  // namespace
}  // namespace lemma
