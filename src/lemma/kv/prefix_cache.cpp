#include "lemma/kv/prefix_cache.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace lemma {

PrefixCache::PrefixCache(BlockPool& pool, int32_t block_size)
    : pool_(&pool), block_size_(block_size), entries_(static_cast<size_t>(pool.num_blocks())) {
  if (block_size <= 0) throw std::invalid_argument(fmt::format("PrefixCache: block_size {} <= 0", block_size));
  tokens_.resize(static_cast<size_t>(pool.num_blocks()) * static_cast<size_t>(block_size));
  by_hash_.reserve(static_cast<size_t>(pool.num_blocks()));
  pool.set_eviction_listener([this](BlockId b) { evict(b); });
}

void PrefixCache::extend_hashes(std::span<const int32_t> token_ids, std::span<const uint64_t> extra_keys,
                                std::vector<BlockHash>& hashes) const {
  const size_t num_full = token_ids.size() / static_cast<size_t>(block_size_);
  for (size_t i = hashes.size(); i < num_full; ++i) {
    const BlockHash parent = i == 0 ? kRootBlockHash : hashes[i - 1];
    hashes.push_back(hash_block(parent, token_ids.subspan(i * block_size_, block_size_), extra_keys));
  }
}

std::vector<BlockId> PrefixCache::find(std::span<const BlockHash> hashes, std::span<const int32_t> token_ids) const {
  std::vector<BlockId> blocks;
  for (size_t i = 0; i < hashes.size(); ++i) {
    if ((i + 1) * block_size_ > token_ids.size()) break;
    const BlockId b = lookup(hashes[i]);
    if (b < 0) break;
    const auto want = token_ids.subspan(i * block_size_, block_size_);
    const auto have = tokens_of(b);
    if (!std::equal(want.begin(), want.end(), have.begin(), have.end())) break;  // a collision: treat as miss
    blocks.push_back(b);
  }
  return blocks;
}

bool PrefixCache::insert(BlockId block, const BlockHash& hash, std::span<const int32_t> block_tokens) {
  if (static_cast<int32_t>(block_tokens.size()) != block_size_)
    throw std::logic_error(fmt::format("PrefixCache: caching a block of {} tokens (block size {})",
                                       block_tokens.size(), block_size_));
  if (pool_->ref_count(block) <= 0) throw std::logic_error(fmt::format("PrefixCache: caching free block {}", block));
  if (entries_[block].valid || by_hash_.count(hash) != 0) return false;
  by_hash_.emplace(hash, block);
  entries_[block] = Entry{hash, true};
  std::copy(block_tokens.begin(), block_tokens.end(), tokens_.begin() + static_cast<std::ptrdiff_t>(block) * block_size_);
  pool_->set_cached(block, true);
  return true;
}

BlockId PrefixCache::lookup(const BlockHash& hash) const {
  const auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? -1 : it->second;
}

void PrefixCache::forget(BlockId block) {
  if (!entries_.at(static_cast<size_t>(block)).valid) return;
  evict(block);
  pool_->set_cached(block, false);
}

void PrefixCache::evict(BlockId block) {
  Entry& e = entries_[block];
  if (!e.valid) return;
  by_hash_.erase(e.hash);
  e = Entry{};
}

void PrefixCache::check_invariants() const {
  int32_t valid = 0;
  for (BlockId b = 0; b < static_cast<BlockId>(entries_.size()); ++b) {
    const Entry& e = entries_[b];
    if (e.valid != pool_->is_cached(b))
      throw std::logic_error(fmt::format("PrefixCache: block {} cached flag disagrees with the pool", b));
    if (!e.valid) continue;
    ++valid;
    if (lookup(e.hash) != b) throw std::logic_error(fmt::format("PrefixCache: block {} missing from the hash map", b));
  }
  if (valid != num_cached_blocks())
    throw std::logic_error(fmt::format("PrefixCache: {} valid entries, {} hashes", valid, num_cached_blocks()));
}

}  // namespace lemma
