// BlockHash: the 128-bit identity of a full KV block's content, chained over (parent hash, the block's
// token ids, extra keys such as adapter id / model id). Two independent 64-bit lanes make an accidental
// collision negligible; PrefixCache also compares the stored token ids. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace lemma {

struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 0x9e3779b97f4a7c15ull)); }
};

// The parent of a sequence's first block.
inline constexpr BlockHash kRootBlockHash{0x6c656d6d61ull, 0x726f6f74ull};

// Hash of one block given its parent's hash, its token ids and the request's extra keys.
BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> token_ids,
                     std::span<const uint64_t> extra_keys);

}  // namespace lemma
