// TreeKeys: which cache slots the nodes of a token tree (tree speculation, G12) attend to, laid out
// so the flash split kernels see each node's keys exactly as they would see its path run as a chain.
// A chain row at position p reads keys 0..p in key order, cut into fixed 256-key splits; a tree node
// at position num_cached + depth must read the cached keys, then its ancestors in depth order, with
// the same cuts. Splits wholly before num_cached hold the same keys for every node and read the
// block table as usual; from the split holding num_cached on, each node gets its own table of slots
// (one entry per key, as a block table of block size 1) that maps key position -> cache slot.
// Plain data over caller-owned memory; make_tree_keys is a pure function.
#pragma once

#include <cstdint>
#include <span>

namespace lemma::layers {

struct TreeKeys {
  // First key of the first split a node reads through `slots`: num_cached rounded down to a
  // multiple of kernels::kFlashSplitKeys.
  int64_t key_begin = 0;
  int64_t key_span = 0;  // entries per node in `slots`: keys key_begin .. (deepest position)
  std::span<const int64_t> positions;  // [nodes]: node r's position num_cached + depth(r)
  // [nodes, key_span]: the cache slot (block * block_size + offset) of key key_begin + k as node r
  // sees it, for key_begin + k <= positions[r] (later entries are 0, never read).
  std::span<const int32_t> slots;

  int64_t end_position() const { return key_begin + key_span; }  // one past the deepest node's position
};

// Entries make_tree_keys writes for a tree with this deepest depth after num_cached tokens.
int64_t tree_key_span(int64_t num_cached, int64_t max_depth);

// Fills `slots` ([parents.size(), tree_key_span(num_cached, max depth)]) for the tree `parents`
// whose node i sits in slot num_cached + i of `block_table` (block_size tokens per block) at
// position positions[i], and returns the view over it. `parents` valid (token_tree.h).
TreeKeys make_tree_keys(std::span<const int32_t> parents, int64_t num_cached, std::span<const int64_t> positions,
                        std::span<const int32_t> block_table, int64_t block_size, std::span<int32_t> slots);

}  // namespace lemma::layers
