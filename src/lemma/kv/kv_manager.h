// KvManager: owns the device BlockPool, its PrefixCache and a host BlockPool (swap tier), and the block
// table of every sequence. It plans, then applies: a call that cannot be satisfied returns nullopt /
// false and changes nothing. Data movement is the caller's: copies come back as plain (src, dst) lists.
// With a sliding window, blocks wholly before every layer's window are dropped from the tables (entry
// kNoBlock, never read again). Not thread-safe (the engine thread owns it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "lemma/kv/block_hash.h"
#include "lemma/kv/block_pool.h"
#include "lemma/kv/prefix_cache.h"
#include "lemma/kv/streaming_window.h"

namespace lemma {

using SeqId = uint64_t;

// A block table entry whose block was dropped: its positions lie wholly before the sliding window (or
// inside a streaming sequence's evicted middle), so no forward reads them again. Dropped entries form
// a prefix of the table (sliding window) or one range after the sinks' blocks (attention sinks, G10).
inline constexpr BlockId kNoBlock = -1;

struct KvManagerConfig {
  int32_t num_device_blocks = 0;
  int32_t block_size = 16;           // tokens per block
  int32_t num_host_blocks = 0;       // swap tier; 0 disables swapping
  double watermark = 0.01;           // fraction of device blocks kept free when admitting a sequence
  bool enable_prefix_caching = true;
  // > 0: every layer attends only to keys p' with p - p' < sliding_window (0: some layer sees the whole
  // context). A query at position >= num_computed_tokens then never reads positions before
  // first_live_position(num_computed_tokens), and drop_dead_blocks frees the blocks wholly before it.
  int64_t sliding_window = 0;
};

// Copy one block's K/V (all layers): device->device for copy-on-write, device->host for swap-out,
// host->device for swap-in.
struct BlockCopy {
  BlockId src = -1;
  BlockId dst = -1;
  friend bool operator==(const BlockCopy&, const BlockCopy&) = default;
};

// The longest cached prefix of a new sequence, in whole blocks; at least one token is left to compute.
struct PrefixHit {
  std::vector<BlockId> blocks;
  std::vector<BlockHash> hashes;  // of every full block of the queried tokens
  int64_t num_tokens = 0;         // blocks.size() * block_size
};

struct SlotAllocation {
  std::vector<BlockId> new_blocks;  // appended to the sequence's block table, in order
  // Copy-on-write: table entry `index` now holds `copy.dst`, which must receive `copy.src`'s K/V first.
  struct Replacement {
    int32_t index = 0;
    BlockCopy copy;
  };
  std::vector<Replacement> replaced;
};

class KvManager {
 public:
  explicit KvManager(const KvManagerConfig& config);
  KvManager(const KvManager&) = delete;
  KvManager& operator=(const KvManager&) = delete;

  // Longest cached prefix of token_ids (none when prefix caching is off). Counts a query.
  PrefixHit find_cached_prefix(std::span<const int32_t> token_ids, std::span<const uint64_t> extra_keys);

  // Grows `seq`'s table so positions [0, num_computed_tokens + num_new_tokens) have blocks, copying
  // shared blocks that positions >= num_computed_tokens would write (copy-on-write; a prefix-cached
  // block it owns alone leaves the cache instead, since its content changes). A sequence not yet
  // known is created, starting from `hit`'s blocks (num_computed_tokens must equal hit->num_tokens).
  // `admission` keeps the watermark free. nullopt (nothing changed) when the device pool is too small.
  std::optional<SlotAllocation> allocate_slots(SeqId seq, int64_t num_computed_tokens, int64_t num_new_tokens,
                                               const PrefixHit* hit = nullptr, bool admission = false);
  // Device blocks allocate_slots would take (new + copy-on-write + revived cached hit blocks).
  int32_t num_blocks_needed(SeqId seq, int64_t num_computed_tokens, int64_t num_new_tokens,
                            const PrefixHit* hit = nullptr) const;

  // Registers the sequence's full blocks within its first num_computed_tokens tokens in the prefix
  // cache (their K/V is written). token_ids: the sequence's tokens (at least num_computed_tokens).
  void cache_computed_blocks(SeqId seq, std::span<const int32_t> token_ids, int64_t num_computed_tokens,
                             std::span<const uint64_t> extra_keys);

  // `child` shares the blocks of `parent` that cover its first num_tokens tokens (all blocks when
  // num_tokens < 0) for parallel sampling; a write to a shared block then copies it (copy-on-write).
  // Blocks before first_live_position(num_tokens) are not shared (kNoBlock). Throws std::logic_error
  // when !can_fork.
  void fork(SeqId parent, SeqId child, int64_t num_tokens = -1);
  // The parent still holds every block a child computing from num_tokens would read (a sliding window
  // may have dropped them).
  bool can_fork(SeqId parent, int64_t num_tokens) const;

  // Prefill/decode disaggregation (G24): K/V computed by another engine enters this one as cached
  // prefix blocks, so a request on those tokens is an ordinary prefix hit.
  // The device blocks holding the leading full blocks of `token_ids` in the prefix cache, from the
  // first (read-only: no references taken, no query counted).
  std::vector<BlockId> cached_prefix_blocks(std::span<const int32_t> token_ids,
                                            std::span<const uint64_t> extra_keys) const;
  // Registers the first `num_blocks` full blocks of `token_ids` as cached: for each one not cached
  // yet, a block is taken from the pool (reference 1) and filed under that block's hash. Returns, per
  // block index, the block the caller must now fill with that block's K/V, or -1 where this cache
  // already holds it; then finish_import() with the same list makes them ordinary evictable cached
  // blocks. Returns nullopt, changing nothing, when the pool cannot supply the blocks (or prefix
  // caching is off).
  std::optional<std::vector<BlockId>> begin_import(std::span<const int32_t> token_ids,
                                                   std::span<const uint64_t> extra_keys, int32_t num_blocks);
  void finish_import(std::span<const BlockId> blocks);
  // Drops the sequence's blocks (device or host). Returns false when `seq` is unknown (idempotent).
  bool free(SeqId seq);

  // Sliding window: the first position a forward from num_computed_tokens reads (0 without a window).
  int64_t first_live_position(int64_t num_computed_tokens) const;
  // Frees `seq`'s device blocks wholly before first_live_position(num_computed_tokens) and marks their
  // table entries kNoBlock; appends the indices dropped now to `dropped` (if given). Returns how many.
  // A cached block keeps its prefix-cache entry until the pool evicts it (its K/V is unchanged).
  // No-op without a window, for unknown or swapped sequences.
  int32_t drop_dead_blocks(SeqId seq, int64_t num_computed_tokens, std::vector<int32_t>* dropped = nullptr);
  // Attention sinks (G10): frees the device blocks of `seq` that lie wholly inside the evicted middle
  // [streaming.num_sinks, streaming.dead_end(num_computed_tokens)) and marks them kNoBlock, as
  // drop_dead_blocks (same `dropped` and return value). Such a sequence is never registered in the
  // prefix cache nor forked again: its later blocks hold streaming K/V, not a plain prefix's.
  // Throws std::logic_error with a sliding window configured. No-op for unknown or swapped sequences.
  int32_t drop_streaming_blocks(SeqId seq, int64_t num_computed_tokens, const StreamingWindow& streaming,
                                std::vector<int32_t>* dropped = nullptr);
  // The most blocks one sequence holds at once on its way to num_tokens tokens when a step adds at most
  // max_step_tokens: blocks_for(num_tokens) without a window; with one, the blocks spanned by the
  // window and a step's tokens (sliding_window + max_step_tokens - 1 positions), if fewer.
  int32_t max_live_blocks(int64_t num_tokens, int64_t max_step_tokens) const;

  // Swap tier. swap_out: device blocks -> fresh host blocks (the device blocks are released);
  // swap_in: host -> fresh device blocks (keeping `extra_blocks` more free, plus the watermark).
  bool can_swap_out(SeqId seq) const;
  std::vector<BlockCopy> swap_out(SeqId seq);  // throws std::logic_error when !can_swap_out
  bool can_swap_in(SeqId seq, int32_t extra_blocks = 0) const;
  std::vector<BlockCopy> swap_in(SeqId seq);  // throws std::logic_error when !can_swap_in
  bool is_swapped(SeqId seq) const;

  bool contains(SeqId seq) const { return seqs_.count(seq) != 0; }
  // The device block table (empty for unknown or swapped sequences); dropped entries are kNoBlock.
  std::span<const BlockId> block_table(SeqId seq) const;
  // Entries in the sequence's table (device or host, dropped ones included), 0 when unknown.
  int32_t num_table_blocks(SeqId seq) const;
  // Blocks the sequence holds (its table less the dropped entries), 0 when unknown.
  int32_t num_held_blocks(SeqId seq) const;
  // Blocks needed to hold num_tokens tokens.
  int32_t blocks_for(int64_t num_tokens) const;
  int32_t num_sequences() const { return static_cast<int32_t>(seqs_.size()); }

  const KvManagerConfig& config() const { return config_; }
  int32_t block_size() const { return config_.block_size; }
  int32_t watermark_blocks() const { return watermark_blocks_; }
  int32_t num_free_blocks() const { return device_.num_free_blocks(); }
  int32_t num_free_host_blocks() const { return host_.num_free_blocks(); }
  const BlockPool& device_pool() const { return device_; }
  const BlockPool& host_pool() const { return host_; }
  const PrefixCache& prefix_cache() const { return *prefix_cache_; }
  uint64_t num_prefix_queries() const { return num_prefix_queries_; }
  uint64_t num_prefix_hits() const { return num_prefix_hits_; }
  uint64_t num_prefix_queried_tokens() const { return num_prefix_queried_tokens_; }
  uint64_t num_prefix_hit_tokens() const { return num_prefix_hit_tokens_; }

  // Pools, cache and tables agree: every reference is held by exactly the tables that list the block.
  // Throws std::logic_error naming the first disagreement.
  void check_invariants() const;

 private:
  struct Sequence {
    std::vector<BlockId> table;  // device blocks, or host blocks while swapped; kNoBlock for dropped ones
    std::vector<BlockHash> hashes;
    size_t num_registered = 0;  // leading blocks already offered to the prefix cache
    // table[drop_begin, num_dropped) are kNoBlock, the rest are held: a prefix for a sliding window
    // (drop_begin 0), the middle after the sinks for a streaming sequence (attention sinks, G10).
    size_t drop_begin = 0;
    size_t num_dropped = 0;
    bool swapped = false;
    bool streaming = false;  // attention sinks: never registered in the prefix cache, never forked

    bool is_dropped(size_t index) const { return index >= drop_begin && index < num_dropped; }
    std::vector<BlockId> held() const;
    // Writes `blocks` (one per held entry, in table order) over the held entries.
    void replace_held(std::span<const BlockId> blocks);
  };
  // Frees s.table[num_dropped, end) (kNoBlock), appending their indices to `dropped`; how many.
  int32_t drop_until(Sequence& s, size_t end, std::vector<int32_t>* dropped);
  // Table entries wholly before first_live_position(num_computed_tokens).
  size_t num_dead_blocks(int64_t num_computed_tokens) const;

  KvManagerConfig config_;
  int32_t watermark_blocks_ = 0;
  BlockPool device_;
  BlockPool host_;
  std::unique_ptr<PrefixCache> prefix_cache_;
  std::unordered_map<SeqId, Sequence> seqs_;
  uint64_t num_prefix_queries_ = 0, num_prefix_hits_ = 0;
  uint64_t num_prefix_queried_tokens_ = 0, num_prefix_hit_tokens_ = 0;
};

}  // namespace lemma
