// PrefixCache: maps the hash chain of full KV blocks to the block that holds that content, so a new
// request reuses the longest cached prefix of its prompt (in whole blocks). Entries live while their
// block is referenced and, once unreferenced, until the BlockPool evicts the block (LRU). Keeps a copy
// of each block's token ids to rule out hash collisions. Not thread-safe (the engine thread owns it).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "lemma/kv/block_hash.h"
#include "lemma/kv/block_pool.h"

namespace lemma {

class PrefixCache {
 public:
  // Registers itself as the pool's eviction listener; the pool must outlive the cache and the cache
  // must not move while registered (KvManager holds both at stable addresses).
  PrefixCache(BlockPool& pool, int32_t block_size);
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // Hashes of the full blocks of token_ids, extending `hashes` (already computed for the first
  // hashes.size() blocks) up to floor(token_ids.size() / block_size) blocks.
  void extend_hashes(std::span<const int32_t> token_ids, std::span<const uint64_t> extra_keys,
                     std::vector<BlockHash>& hashes) const;

  // Blocks holding the longest cached prefix: block i matches hashes[i] and token_ids' i-th block.
  // Does not take references.
  std::vector<BlockId> find(std::span<const BlockHash> hashes, std::span<const int32_t> token_ids) const;

  // Registers `block` (referenced, full, computed) as holding `block_tokens` with `hash`. Returns false
  // (nothing changed) when that content is already cached in some block or `block` is already cached.
  bool insert(BlockId block, const BlockHash& hash, std::span<const int32_t> block_tokens);

  // Drops `block`'s entry (its owner is about to overwrite part of it). No-op when it is not cached.
  void forget(BlockId block);

  // The block currently caching `hash`, or -1.
  BlockId lookup(const BlockHash& hash) const;
  int32_t num_cached_blocks() const { return static_cast<int32_t>(by_hash_.size()); }
  int32_t block_size() const { return block_size_; }

  // Throws std::logic_error when the map and the pool's cached flags disagree.
  void check_invariants() const;

 private:
  struct Entry {
    BlockHash hash;
    bool valid = false;
  };
  void evict(BlockId block);
  std::span<const int32_t> tokens_of(BlockId block) const {
    return std::span(tokens_).subspan(static_cast<size_t>(block) * block_size_, static_cast<size_t>(block_size_));
  }

  BlockPool* pool_;
  int32_t block_size_;
  std::unordered_map<BlockHash, BlockId, BlockHashHasher> by_hash_;
  std::vector<Entry> entries_;   // indexed by block id
  std::vector<int32_t> tokens_;  // [num_blocks, block_size]: each valid entry's token ids (no allocation per insert)
};

}  // namespace lemma
