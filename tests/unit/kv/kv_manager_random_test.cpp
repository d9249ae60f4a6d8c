// Random operations on a KvManager (admission with prefix hits, growth, copy-on-write after forks,
// swap out/in, caching, frees, and with a sliding window the dropping of dead blocks) against a
// simulated K/V store: after every operation each sequence reads back its own tokens through its block
// table (from the first position its next forward reads), and pools, cache and tables agree.
#include <map>
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>

#include "lemma/kv/kv_manager.h"

namespace lemma {
namespace {

struct SimSeq {
  std::vector<int32_t> tokens;
  int64_t computed = 0;
};

class KvRandom {
 public:
  KvRandom(uint64_t seed, int32_t blocks, int32_t host_blocks, int32_t block_size, int64_t window = 0)
      : rng_(seed), bs_(block_size), kv_(config(blocks, host_blocks, block_size, window)),
        device_(static_cast<size_t>(blocks) * block_size, -1), host_(static_cast<size_t>(host_blocks) * block_size, -1) {
    for (int p = 0; p < 3; ++p) {
      std::vector<int32_t> prefix(static_cast<size_t>(uniform(1, 4) * bs_));
      for (auto& t : prefix) t = uniform(0, 9);
      prefixes_.push_back(prefix);
    }
  }

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  void step() {
    const int op = uniform(0, 9);
    if (op <= 1 || seqs_.empty()) return admit();
    auto it = seqs_.begin();
    std::advance(it, uniform(0, static_cast<int>(seqs_.size()) - 1));
    const SeqId id = it->first;
    SimSeq& s = it->second;
    if (op <= 5) return grow(id, s);
    if (op == 6) return fork(id, s);
    if (op == 7) {
      if (kv_.is_swapped(id)) {
        if (kv_.can_swap_in(id)) move_blocks(kv_.swap_in(id), host_, device_);
      } else if (kv_.can_swap_out(id)) {
        move_blocks(kv_.swap_out(id), device_, host_);
      }
      return;
    }
    if (op == 8) {
      if (uniform(0, 1) == 0) dropped += static_cast<uint64_t>(kv_.drop_dead_blocks(id, s.computed));
      return kv_.cache_computed_blocks(id, s.tokens, s.computed, {});
    }
    EXPECT_TRUE(kv_.free(id));
    seqs_.erase(id);
  }

  void verify() {
    kv_.check_invariants();
    for (const auto& [id, s] : seqs_) {
      if (kv_.is_swapped(id)) continue;
      const auto table = kv_.block_table(id);
      ASSERT_GE(static_cast<int64_t>(table.size()) * bs_, s.computed) << "seq " << id;
      for (int64_t p = kv_.first_live_position(s.computed); p < s.computed; ++p)
        ASSERT_EQ(device_[slot(table, p)], s.tokens[static_cast<size_t>(p)]) << "seq " << id << " position " << p;
    }
  }

  void finish() {
    for (const auto& [id, s] : seqs_) kv_.free(id);
    seqs_.clear();
    kv_.check_invariants();
    EXPECT_EQ(kv_.num_free_blocks(), kv_.device_pool().num_blocks());
    EXPECT_EQ(kv_.num_free_host_blocks(), kv_.host_pool().num_blocks());
  }

  uint64_t hits() const { return kv_.num_prefix_hits(); }
  uint64_t cow = 0, forks = 0, dropped = 0;

 private:
  static KvManagerConfig config(int32_t blocks, int32_t host_blocks, int32_t block_size, int64_t window) {
    KvManagerConfig c;
    c.sliding_window = window;
    c.num_device_blocks = blocks;
    c.num_host_blocks = host_blocks;
    c.block_size = block_size;
    c.watermark = 0.05;
    return c;
  }
  size_t slot(std::span<const BlockId> table, int64_t p) const {
    if (table[static_cast<size_t>(p / bs_)] == kNoBlock)
      throw std::logic_error("position " + std::to_string(p) + " is in a dropped block");
    return static_cast<size_t>(table[static_cast<size_t>(p / bs_)]) * bs_ + static_cast<size_t>(p % bs_);
  }
  void write(SeqId id, SimSeq& s, int64_t n) {
    const auto table = kv_.block_table(id);
    for (int64_t p = s.computed; p < s.computed + n; ++p) device_[slot(table, p)] = s.tokens[static_cast<size_t>(p)];
    s.computed += n;
  }
  void move_blocks(const std::vector<BlockCopy>& copies, const std::vector<int32_t>& from, std::vector<int32_t>& to) {
    for (const auto& c : copies)
      for (int i = 0; i < bs_; ++i) to[static_cast<size_t>(c.dst) * bs_ + i] = from[static_cast<size_t>(c.src) * bs_ + i];
  }

  void admit() {
    SimSeq s;
    if (uniform(0, 1) == 0) s.tokens = prefixes_[static_cast<size_t>(uniform(0, 2))];
    const int suffix = uniform(s.tokens.empty() ? 1 : 0, 3 * bs_);
    for (int i = 0; i < suffix; ++i) s.tokens.push_back(uniform(0, 9));
    const PrefixHit hit = kv_.find_cached_prefix(s.tokens, {});
    ASSERT_LT(hit.num_tokens, static_cast<int64_t>(s.tokens.size()));
    const int64_t n = uniform(1, static_cast<int>(s.tokens.size() - hit.num_tokens));
    const SeqId id = next_id_++;
    const int32_t free_before = kv_.num_free_blocks();
    if (!kv_.allocate_slots(id, hit.num_tokens, n, &hit, true)) {
      EXPECT_FALSE(kv_.contains(id));
      EXPECT_EQ(kv_.num_free_blocks(), free_before);
      return;
    }
    s.computed = hit.num_tokens;
    write(id, s, n);
    seqs_.emplace(id, std::move(s));
  }

  void grow(SeqId id, SimSeq& s) {
    if (kv_.is_swapped(id)) return;
    if (s.computed == static_cast<int64_t>(s.tokens.size()))
      for (int k = uniform(1, 5); k > 0; --k) s.tokens.push_back(uniform(0, 9));
    const int64_t n = uniform(1, static_cast<int>(s.tokens.size() - s.computed));
    if (uniform(0, 1) == 0) dropped += static_cast<uint64_t>(kv_.drop_dead_blocks(id, s.computed));
    const int32_t free_before = kv_.num_free_blocks();
    const auto alloc = kv_.allocate_slots(id, s.computed, n);
    if (!alloc) {
      EXPECT_EQ(kv_.num_free_blocks(), free_before);
      return;
    }
    std::vector<BlockCopy> copies;
    for (const auto& r : alloc->replaced) copies.push_back(r.copy);
    cow += copies.size();
    move_blocks(copies, device_, device_);
    write(id, s, n);
  }

  void fork(SeqId id, SimSeq& s) {
    const int64_t t = uniform(0, static_cast<int>(s.computed));
    if (!kv_.can_fork(id, t)) return;
    SimSeq child{std::vector<int32_t>(s.tokens.begin(), s.tokens.begin() + t), t};
    const SeqId cid = next_id_++;
    kv_.fork(id, cid, t);
    ++forks;
    seqs_.emplace(cid, std::move(child));
  }

  std::mt19937_64 rng_;
  int32_t bs_;
  KvManager kv_;
  std::vector<int32_t> device_, host_;
  std::vector<std::vector<int32_t>> prefixes_;
  std::map<SeqId, SimSeq> seqs_;
  SeqId next_id_ = 1;
};

// 400 random steps, each verified, then the end; false at the first failure.
bool run_steps(KvRandom& sim) {
  for (int i = 0; i < 400; ++i) {
    sim.step();
    sim.verify();
    if (::testing::Test::HasFailure()) return false;
  }
  sim.finish();
  return !::testing::Test::HasFailure();
}

TEST(KvManagerRandom, TablesAlwaysReadBackTheirOwnTokens) {
  uint64_t hits = 0, cow = 0, forks = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    KvRandom sim(seed, 24 + static_cast<int32_t>(seed % 16), static_cast<int32_t>(seed % 3) * 12, seed % 2 ? 4 : 8);
    if (!run_steps(sim)) return;
    hits += sim.hits();
    cow += sim.cow;
    forks += sim.forks;
  }
  EXPECT_GT(hits, 0u);
  EXPECT_GT(cow, 0u);
  EXPECT_GT(forks, 0u);
}

// The same with sliding windows of 1 to 3 blocks and a bit: dropped blocks go back to the pool and,
// when cached, may be hit again until evicted; every hit must still read back its own tokens.
TEST(KvManagerRandom, WindowedTablesReadBackTheirLiveTokens) {
  uint64_t hits = 0, forks = 0, dropped = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const int32_t bs = seed % 2 ? 4 : 8;
    KvRandom sim(seed, 24 + static_cast<int32_t>(seed % 16), static_cast<int32_t>(seed % 3) * 12, bs,
                 static_cast<int64_t>(1 + seed % 3) * bs + static_cast<int64_t>(seed % 5));
    if (!run_steps(sim)) return;
    hits += sim.hits();
    forks += sim.forks;
    dropped += sim.dropped;
  }
  EXPECT_GT(hits, 0u);
  EXPECT_GT(forks, 0u);
  EXPECT_GT(dropped, 0u);
}

}  // namespace
}  // namespace lemma
