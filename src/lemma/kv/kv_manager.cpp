#include "lemma/kv/kv_manager.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace lemma {

KvManager::KvManager(const KvManagerConfig& config)
    : config_(config), device_(config.num_device_blocks), host_(config.num_host_blocks) {
  if (config.block_size <= 0) throw std::invalid_argument(fmt::format("KvManager: block_size {} <= 0", config.block_size));
  if (!(config.watermark >= 0.0 && config.watermark < 1.0))
    throw std::invalid_argument(fmt::format("KvManager: watermark {} outside [0, 1)", config.watermark));
  watermark_blocks_ = static_cast<int32_t>(std::floor(config.watermark * config.num_device_blocks));
  prefix_cache_ = std::make_unique<PrefixCache>(device_, config.block_size);
}

std::vector<BlockId> KvManager::Sequence::held() const {
  std::vector<BlockId> blocks;
  blocks.reserve(table.size());
  for (size_t i = 0; i < table.size(); ++i)
    if (!is_dropped(i)) blocks.push_back(table[i]);
  return blocks;
}

void KvManager::Sequence::replace_held(std::span<const BlockId> blocks) {
  size_t next = 0;
  for (size_t i = 0; i < table.size(); ++i)
    if (!is_dropped(i)) table[i] = blocks[next++];
}

int32_t KvManager::blocks_for(int64_t num_tokens) const {
  return static_cast<int32_t>((num_tokens + config_.block_size - 1) / config_.block_size);
}

int64_t KvManager::first_live_position(int64_t num_computed_tokens) const {
  if (config_.sliding_window <= 0) return 0;
  return std::max<int64_t>(0, num_computed_tokens - config_.sliding_window + 1);
}

size_t KvManager::num_dead_blocks(int64_t num_computed_tokens) const {
  return static_cast<size_t>(first_live_position(num_computed_tokens) / config_.block_size);
}

int32_t KvManager::max_live_blocks(int64_t num_tokens, int64_t max_step_tokens) const {
  const int32_t all = blocks_for(num_tokens);
  if (config_.sliding_window <= 0) return all;
  // Positions [c - window + 1, c + n - 1] are read or written by a step from c; L consecutive
  // positions span at most ceil((L - 1) / block_size) + 1 blocks.
  const int64_t span = config_.sliding_window + std::max<int64_t>(1, max_step_tokens) - 1;
  const int64_t live = (span - 1 + config_.block_size - 1) / config_.block_size + 1;
  return static_cast<int32_t>(std::min<int64_t>(all, live));
}

PrefixHit KvManager::find_cached_prefix(std::span<const int32_t> token_ids, std::span<const uint64_t> extra_keys) {
  PrefixHit hit;
  if (!config_.enable_prefix_caching || token_ids.empty()) return hit;
  ++num_prefix_queries_;
  num_prefix_queried_tokens_ += token_ids.size();
  prefix_cache_->extend_hashes(token_ids, extra_keys, hit.hashes);
  // Leave at least one token to compute: its logits are what the request needs next.
  const size_t max_blocks = (token_ids.size() - 1) / static_cast<size_t>(config_.block_size);
  hit.blocks = prefix_cache_->find(std::span(hit.hashes).first(std::min(max_blocks, hit.hashes.size())), token_ids);
  hit.num_tokens = static_cast<int64_t>(hit.blocks.size()) * config_.block_size;
  if (!hit.blocks.empty()) ++num_prefix_hits_;
  num_prefix_hit_tokens_ += static_cast<uint64_t>(hit.num_tokens);
  return hit;
}

int32_t KvManager::num_blocks_needed(SeqId seq, int64_t num_computed_tokens, int64_t num_new_tokens,
                                     const PrefixHit* hit) const {
  const int32_t target = blocks_for(num_computed_tokens + num_new_tokens);
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    if (hit == nullptr) return target;
    if (num_computed_tokens != hit->num_tokens)
      throw std::logic_error(fmt::format("KvManager: seq {} starts at {} computed tokens but its hit covers {}", seq,
                                         num_computed_tokens, hit->num_tokens));
    int32_t revived = 0;
    for (size_t i = num_dead_blocks(num_computed_tokens); i < hit->blocks.size(); ++i)
      revived += device_.ref_count(hit->blocks[i]) == 0;
    return revived + std::max(0, target - static_cast<int32_t>(hit->blocks.size()));
  }
  const Sequence& s = it->second;
  if (s.swapped) throw std::logic_error(fmt::format("KvManager: seq {} is swapped out", seq));
  const int32_t size = static_cast<int32_t>(s.table.size());
  int32_t cow = 0;
  if (num_new_tokens > 0) {
    for (int32_t i = static_cast<int32_t>(num_computed_tokens / config_.block_size); i < std::min(target, size); ++i)
      cow += device_.ref_count(s.table[i]) > 1;
  }
  return cow + std::max(0, target - size);
}

std::optional<SlotAllocation> KvManager::allocate_slots(SeqId seq, int64_t num_computed_tokens, int64_t num_new_tokens,
                                                        const PrefixHit* hit, bool admission) {
  if (num_computed_tokens < 0 || num_new_tokens < 0)
    throw std::logic_error(fmt::format("KvManager: allocate_slots({}, {}, {})", seq, num_computed_tokens, num_new_tokens));
  const int32_t needed = num_blocks_needed(seq, num_computed_tokens, num_new_tokens, hit);
  const int32_t reserve = admission ? watermark_blocks_ : 0;
  if (device_.num_free_blocks() - needed < reserve) return std::nullopt;

  auto [it, created] = seqs_.try_emplace(seq);
  Sequence& s = it->second;
  if (created && hit != nullptr) {
    // Hit blocks wholly before the window are never read: the sequence does not take them.
    s.table = hit->blocks;
    s.num_dropped = std::min(num_dead_blocks(num_computed_tokens), s.table.size());
    std::fill_n(s.table.begin(), s.num_dropped, kNoBlock);
    for (BlockId b : s.held()) device_.add_ref(b);
    s.hashes = hit->hashes;
    s.num_registered = hit->blocks.size();
  }
  SlotAllocation out;
  const int32_t target = blocks_for(num_computed_tokens + num_new_tokens);
  const int32_t size = static_cast<int32_t>(s.table.size());
  if (num_new_tokens > 0) {
    for (int32_t i = static_cast<int32_t>(num_computed_tokens / config_.block_size); i < std::min(target, size); ++i) {
      const BlockId old = s.table[i];
      if (device_.ref_count(old) <= 1) {
        // Sole owner of a cached block (a fork whose parent let go): the write changes its content.
        prefix_cache_->forget(old);
        continue;
      }
      const BlockId fresh = device_.allocate(1)[0];
      device_.free(old);
      s.table[i] = fresh;
      out.replaced.push_back({i, BlockCopy{old, fresh}});
    }
  }
  if (target > size) {
    out.new_blocks = device_.allocate(target - size);
    s.table.insert(s.table.end(), out.new_blocks.begin(), out.new_blocks.end());
  }
  return out;
}

void KvManager::cache_computed_blocks(SeqId seq, std::span<const int32_t> token_ids, int64_t num_computed_tokens,
                                      std::span<const uint64_t> extra_keys) {
  if (!config_.enable_prefix_caching) return;
  const auto it = seqs_.find(seq);
  if (it == seqs_.end() || it->second.swapped) return;
  Sequence& s = it->second;
  if (num_computed_tokens > static_cast<int64_t>(token_ids.size()))
    throw std::logic_error(fmt::format("KvManager: seq {} has {} computed of {} tokens", seq, num_computed_tokens,
                                       token_ids.size()));
  const size_t num_full = std::min(static_cast<size_t>(num_computed_tokens / config_.block_size), s.table.size());
  if (s.num_registered >= num_full || s.streaming) return;  // streaming K/V is no plain prefix
  prefix_cache_->extend_hashes(token_ids.first(num_full * config_.block_size), extra_keys, s.hashes);
  for (size_t i = std::max(s.num_registered, s.num_dropped); i < num_full; ++i)
    prefix_cache_->insert(s.table[i], s.hashes[i], token_ids.subspan(i * config_.block_size, config_.block_size));
  s.num_registered = num_full;
}

std::vector<BlockId> KvManager::cached_prefix_blocks(std::span<const int32_t> token_ids,
                                                std::span<const uint64_t> extra_keys) const {
  if (!config_.enable_prefix_caching) return {};
  std::vector<BlockHash> hashes;
  prefix_cache_->extend_hashes(token_ids, extra_keys, hashes);
  return prefix_cache_->find(hashes, token_ids);
}

std::optional<std::vector<BlockId>> KvManager::begin_import(std::span<const int32_t> token_ids,
                                                            std::span<const uint64_t> extra_keys,
                                                            int32_t num_blocks) {
  if (!config_.enable_prefix_caching || num_blocks < 0) return std::nullopt;
  std::vector<BlockHash> hashes;
  prefix_cache_->extend_hashes(token_ids, extra_keys, hashes);
  if (static_cast<size_t>(num_blocks) > hashes.size()) return std::nullopt;
  std::vector<BlockId> result(static_cast<size_t>(num_blocks), -1);
  std::vector<BlockId> pinned;  // the blocks held already, kept from eviction while we allocate
  int32_t missing = 0;
  for (int32_t i = 0; i < num_blocks; ++i) {
    const BlockId held = prefix_cache_->lookup(hashes[static_cast<size_t>(i)]);
    if (held >= 0) pinned.push_back(held);
    else ++missing;
  }
  for (BlockId b : pinned) device_.add_ref(b);
  if (!device_.can_allocate(missing)) {
    for (BlockId b : pinned) device_.free(b);
    return std::nullopt;
  }
  std::vector<BlockId> fresh = device_.allocate(missing);
  size_t next = 0;
  for (int32_t i = 0; i < num_blocks; ++i) {
    const auto index = static_cast<size_t>(i);
    if (prefix_cache_->lookup(hashes[index]) >= 0) continue;
    result[index] = fresh[next++];
    prefix_cache_->insert(result[index], hashes[index], token_ids.subspan(index * config_.block_size, config_.block_size));
  }
  for (BlockId b : pinned) device_.free(b);
  return result;
}

void KvManager::finish_import(std::span<const BlockId> blocks) {
  // Deepest first, as free() does: the chain's head stays cached longest.
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b)
    if (*b >= 0) device_.free(*b);
}

bool KvManager::can_fork(SeqId parent, int64_t num_tokens) const {
  const auto it = seqs_.find(parent);
  if (it == seqs_.end()) return false;
  if (num_tokens < 0) return !it->second.streaming;
  const Sequence& s = it->second;
  if (s.streaming) return false;  // its middle is evicted, its K/V no plain prefix
  const size_t num_blocks = std::min(s.table.size(), static_cast<size_t>(blocks_for(num_tokens)));
  return s.num_dropped <= std::min(num_blocks, num_dead_blocks(num_tokens));
}

void KvManager::fork(SeqId parent, SeqId child, int64_t num_tokens) {
  const auto it = seqs_.find(parent);
  if (it == seqs_.end()) throw std::logic_error(fmt::format("KvManager: fork of unknown seq {}", parent));
  if (seqs_.count(child) != 0) throw std::logic_error(fmt::format("KvManager: fork into existing seq {}", child));
  if (!can_fork(parent, num_tokens))
    throw std::logic_error(fmt::format("KvManager: seq {} dropped blocks a fork at {} tokens reads", parent, num_tokens));
  Sequence copy = it->second;
  if (num_tokens >= 0) {
    const size_t num_blocks = std::min(copy.table.size(), static_cast<size_t>(blocks_for(num_tokens)));
    const size_t num_full = std::min(num_blocks, static_cast<size_t>(num_tokens / config_.block_size));
    copy.table.resize(num_blocks);
    copy.hashes.resize(std::min(copy.hashes.size(), num_full));
    copy.num_registered = std::min(copy.num_registered, num_full);
    copy.num_dropped = std::min(num_blocks, num_dead_blocks(num_tokens));
    std::fill_n(copy.table.begin(), copy.num_dropped, kNoBlock);
  }
  BlockPool& pool = copy.swapped ? host_ : device_;
  for (BlockId b : copy.held()) pool.add_ref(b);
  seqs_.emplace(child, std::move(copy));
}

bool KvManager::free(SeqId seq) {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) return false;
  BlockPool& pool = it->second.swapped ? host_ : device_;
  // Tail blocks first: among cached blocks they are the least likely to be shared, so they go LRU first.
  const auto held = it->second.held();
  for (auto b = held.rbegin(); b != held.rend(); ++b) pool.free(*b);
  seqs_.erase(it);
  return true;
}

int32_t KvManager::drop_dead_blocks(SeqId seq, int64_t num_computed_tokens, std::vector<int32_t>* dropped) {
  const auto it = seqs_.find(seq);
  if (config_.sliding_window <= 0 || it == seqs_.end() || it->second.swapped) return 0;
  Sequence& s = it->second;
  return drop_until(s, std::min(num_dead_blocks(num_computed_tokens), s.table.size()), dropped);
}

int32_t KvManager::drop_until(Sequence& s, size_t end, std::vector<int32_t>* dropped) {
  if (end <= s.num_dropped) return 0;
  // Newest first, as in free(): the older blocks, likelier shared prefixes, stay cached longest.
  for (size_t i = end; i-- > s.num_dropped;) {
    device_.free(s.table[i]);
    s.table[i] = kNoBlock;
  }
  if (dropped != nullptr)
    for (size_t i = s.num_dropped; i < end; ++i) dropped->push_back(static_cast<int32_t>(i));
  const auto n = static_cast<int32_t>(end - s.num_dropped);
  s.num_dropped = end;
  return n;
}

int32_t KvManager::drop_streaming_blocks(SeqId seq, int64_t num_computed_tokens, const StreamingWindow& streaming,
                                         std::vector<int32_t>* dropped) {
  if (config_.sliding_window > 0)
    throw std::logic_error(fmt::format("KvManager: seq {}: attention sinks with a sliding window", seq));
  const auto it = seqs_.find(seq);
  if (!streaming.enabled() || it == seqs_.end() || it->second.swapped) return 0;
  Sequence& s = it->second;
  s.streaming = true;
  const size_t begin = static_cast<size_t>(streaming.first_dead_block(config_.block_size));
  const size_t end = std::min(static_cast<size_t>(streaming.dead_block_end(num_computed_tokens, config_.block_size)),
                              s.table.size());
  if (s.num_dropped == 0) s.drop_begin = s.num_dropped = begin;  // nothing dropped yet
  if (s.drop_begin != begin)
    throw std::logic_error(fmt::format("KvManager: seq {} dropped from block {}, its sinks end at {}", seq, s.drop_begin, begin));
  return drop_until(s, end, dropped);
}

bool KvManager::can_swap_out(SeqId seq) const {
  const auto it = seqs_.find(seq);
  return it != seqs_.end() && !it->second.swapped &&
         host_.can_allocate(static_cast<int32_t>(it->second.held().size()));
}

std::vector<BlockCopy> KvManager::swap_out(SeqId seq) {
  if (!can_swap_out(seq)) throw std::logic_error(fmt::format("KvManager: cannot swap out seq {}", seq));
  Sequence& s = seqs_.at(seq);
  const auto held = s.held();
  const std::vector<BlockId> host = host_.allocate(static_cast<int32_t>(held.size()));
  std::vector<BlockCopy> copies;
  for (size_t i = 0; i < host.size(); ++i) copies.push_back({held[i], host[i]});
  for (auto b = held.rbegin(); b != held.rend(); ++b) device_.free(*b);
  s.replace_held(host);
  s.swapped = true;
  s.num_registered = 0;
  return copies;
}

bool KvManager::can_swap_in(SeqId seq, int32_t extra_blocks) const {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end() || !it->second.swapped) return false;
  const int32_t need = static_cast<int32_t>(it->second.held().size()) + extra_blocks;
  return device_.num_free_blocks() - need >= watermark_blocks_;
}

std::vector<BlockCopy> KvManager::swap_in(SeqId seq) {
  if (!can_swap_in(seq)) throw std::logic_error(fmt::format("KvManager: cannot swap in seq {}", seq));
  Sequence& s = seqs_.at(seq);
  const auto held = s.held();
  const std::vector<BlockId> device = device_.allocate(static_cast<int32_t>(held.size()));
  std::vector<BlockCopy> copies;
  for (size_t i = 0; i < device.size(); ++i) copies.push_back({held[i], device[i]});
  for (auto b = held.rbegin(); b != held.rend(); ++b) host_.free(*b);
  s.replace_held(device);
  s.swapped = false;
  s.num_registered = 0;
  return copies;
}

int32_t KvManager::num_table_blocks(SeqId seq) const {
  const auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : static_cast<int32_t>(it->second.table.size());
}

int32_t KvManager::num_held_blocks(SeqId seq) const {
  const auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : static_cast<int32_t>(it->second.held().size());
}

bool KvManager::is_swapped(SeqId seq) const {
  const auto it = seqs_.find(seq);
  return it != seqs_.end() && it->second.swapped;
}

std::span<const BlockId> KvManager::block_table(SeqId seq) const {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end() || it->second.swapped) return {};
  return it->second.table;
}

void KvManager::check_invariants() const {
  device_.check_invariants();
  host_.check_invariants();
  prefix_cache_->check_invariants();
  std::vector<int32_t> device_refs(device_.num_blocks(), 0), host_refs(host_.num_blocks(), 0);
  for (const auto& [id, s] : seqs_) {
    auto& refs = s.swapped ? host_refs : device_refs;
    if (s.num_dropped > s.table.size())
      throw std::logic_error(fmt::format("KvManager: seq {} dropped {} of {} blocks", id, s.num_dropped, s.table.size()));
    for (size_t i = s.drop_begin; i < s.num_dropped; ++i)
      if (s.table[i] != kNoBlock)
        throw std::logic_error(fmt::format("KvManager: seq {} holds block {} at dropped index {}", id, s.table[i], i));
    for (BlockId b : s.held()) {
      if (b < 0 || b >= static_cast<BlockId>(refs.size()))
        throw std::logic_error(fmt::format("KvManager: seq {} holds invalid block {}", id, b));
      ++refs[b];
    }
  }
  for (BlockId b = 0; b < device_.num_blocks(); ++b)
    if (device_refs[b] != device_.ref_count(b))
      throw std::logic_error(fmt::format("KvManager: device block {} listed {} times, ref count {}", b, device_refs[b],
                                         device_.ref_count(b)));
  for (BlockId b = 0; b < host_.num_blocks(); ++b)
    if (host_refs[b] != host_.ref_count(b))
      throw std::logic_error(fmt::format("KvManager: host block {} listed {} times, ref count {}", b, host_refs[b],
                                         host_.ref_count(b)));
}

}  // namespace lemma
