#include "lemma/kv/block_pool.h"

#include <stdexcept>

#include <fmt/format.h>

namespace lemma {

BlockPool::BlockPool(int32_t num_blocks) {
  if (num_blocks < 0) throw std::invalid_argument(fmt::format("BlockPool: num_blocks {} < 0", num_blocks));
  ref_counts_.assign(num_blocks, 0);
  cached_.assign(num_blocks, 0);
  prev_.assign(num_blocks, -1);
  next_.assign(num_blocks, -1);
  for (BlockId b = 0; b < num_blocks; ++b) push_back(b);
  num_free_ = num_blocks;
}

void BlockPool::check_id(BlockId block) const {
  if (block < 0 || block >= num_blocks())
    throw std::logic_error(fmt::format("BlockPool: block id {} outside [0, {})", block, num_blocks()));
}

void BlockPool::unlink(BlockId b) {
  const BlockId p = prev_[b], n = next_[b];
  (p >= 0 ? next_[p] : head_) = n;
  (n >= 0 ? prev_[n] : tail_) = p;
  prev_[b] = next_[b] = -1;
}

void BlockPool::push_front(BlockId b) {
  prev_[b] = -1;
  next_[b] = head_;
  (head_ >= 0 ? prev_[head_] : tail_) = b;
  head_ = b;
}

void BlockPool::push_back(BlockId b) {
  next_[b] = -1;
  prev_[b] = tail_;
  (tail_ >= 0 ? next_[tail_] : head_) = b;
  tail_ = b;
}

std::vector<BlockId> BlockPool::allocate(int32_t n) {
  if (!can_allocate(n))
    throw std::logic_error(fmt::format("BlockPool: allocate({}) with {} free blocks", n, num_free_));
  std::vector<BlockId> blocks;
  blocks.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    const BlockId b = head_;
    unlink(b);
    ref_counts_[b] = 1;
    --num_free_;
    if (cached_[b]) {
      cached_[b] = 0;
      if (on_evict_) on_evict_(b);
    }
    blocks.push_back(b);
  }
  return blocks;
}

void BlockPool::add_ref(BlockId block) {
  check_id(block);
  if (ref_counts_[block]++ == 0) {
    unlink(block);
    --num_free_;
  }
}

void BlockPool::free(BlockId block) {
  check_id(block);
  if (ref_counts_[block] <= 0) throw std::logic_error(fmt::format("BlockPool: double free of block {}", block));
  if (--ref_counts_[block] == 0) {
    cached_[block] ? push_back(block) : push_front(block);
    ++num_free_;
  }
}

int32_t BlockPool::ref_count(BlockId block) const {
  check_id(block);
  return ref_counts_[block];
}

void BlockPool::set_cached(BlockId block, bool cached) {
  check_id(block);
  if ((cached_[block] != 0) == cached) return;
  cached_[block] = cached ? 1 : 0;
  if (ref_counts_[block] == 0) {  // keep the free list's order: uncached first, then cached LRU
    unlink(block);
    cached ? push_back(block) : push_front(block);
  }
}

bool BlockPool::is_cached(BlockId block) const {
  check_id(block);
  return cached_[block] != 0;
}

void BlockPool::check_invariants() const {
  const int32_t n = num_blocks();
  int32_t zero_refs = 0;
  for (BlockId b = 0; b < n; ++b) {
    if (ref_counts_[b] < 0) throw std::logic_error(fmt::format("BlockPool: block {} has ref count {}", b, ref_counts_[b]));
    zero_refs += ref_counts_[b] == 0;
  }
  if (zero_refs != num_free_)
    throw std::logic_error(fmt::format("BlockPool: {} blocks without refs but num_free {}", zero_refs, num_free_));
  int32_t listed = 0;
  bool seen_cached = false;
  for (BlockId b = head_, prev = -1; b >= 0; prev = b, b = next_[b]) {
    if (++listed > n) throw std::logic_error("BlockPool: free list has a cycle");
    if (prev_[b] != prev) throw std::logic_error(fmt::format("BlockPool: broken back link at block {}", b));
    if (ref_counts_[b] != 0) throw std::logic_error(fmt::format("BlockPool: block {} in free list with refs", b));
    if (cached_[b]) seen_cached = true;
    else if (seen_cached) throw std::logic_error(fmt::format("BlockPool: uncached block {} after cached ones", b));
  }
  if (listed != num_free_)
    throw std::logic_error(fmt::format("BlockPool: free list holds {} blocks, num_free {}", listed, num_free_));
}

}  // namespace lemma
