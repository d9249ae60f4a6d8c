// BlockPool: fixed-size KV blocks identified by int32 ids, with reference counts and one free list.
// Free blocks without cached content are reused first; free blocks that still hold prefix-cached content
// queue in LRU order and are evicted (listener told) only when allocation needs them. Plain bookkeeping:
// no KV storage. Not thread-safe (the engine thread owns it).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace lemma {

using BlockId = int32_t;

class BlockPool {
 public:
  using EvictionListener = std::function<void(BlockId)>;

  explicit BlockPool(int32_t num_blocks);
  BlockPool(BlockPool&&) noexcept = default;
  BlockPool& operator=(BlockPool&&) noexcept = default;
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  // Blocks with no reference (including those that still hold evictable cached content).
  int32_t num_free_blocks() const { return num_free_; }
  int32_t num_used_blocks() const { return num_blocks() - num_free_; }
  bool can_allocate(int32_t n) const { return n >= 0 && n <= num_free_; }

  // n blocks with reference count 1, uncached ones first, then least recently freed cached ones
  // (their eviction is reported to the listener). Throws std::logic_error, changing nothing, when
  // !can_allocate(n).
  std::vector<BlockId> allocate(int32_t n);
  // One more reference; a free (cached) block leaves the free list.
  void add_ref(BlockId block);
  // One reference less; at zero the block returns to the free list. Throws std::logic_error on a
  // double free or an invalid id (nothing changed).
  void free(BlockId block);

  int32_t ref_count(BlockId block) const;
  // Marks a block as holding prefix-cached content (moves it to the LRU end when freed).
  void set_cached(BlockId block, bool cached);
  bool is_cached(BlockId block) const;
  void set_eviction_listener(EvictionListener listener) { on_evict_ = std::move(listener); }

  // Throws std::logic_error naming the first violated invariant (free count, list links, refs).
  void check_invariants() const;

 private:
  void check_id(BlockId block) const;
  void unlink(BlockId block);
  void push_front(BlockId block);
  void push_back(BlockId block);

  std::vector<int32_t> ref_counts_;
  std::vector<uint8_t> cached_;
  std::vector<BlockId> prev_, next_;  // free list links, -1 = none
  BlockId head_ = -1, tail_ = -1;
  int32_t num_free_ = 0;
  EvictionListener on_evict_;
};

}  // namespace lemma
