#include "lemma/model/layers/tree_keys.h"

#include <algorithm>
#include <cassert>

#include "lemma/kernels/attention/flash_attention.h"

namespace lemma::layers {

namespace {
int64_t split_start(int64_t position) { return position / kernels::kFlashSplitKeys * kernels::kFlashSplitKeys; }
}  // namespace

int64_t tree_key_span(int64_t num_cached, int64_t max_depth) {
  return num_cached - split_start(num_cached) + max_depth + 1;
}

TreeKeys make_tree_keys(std::span<const int32_t> parents, int64_t num_cached, std::span<const int64_t> positions,
                        std::span<const int32_t> block_table, int64_t block_size, std::span<int32_t> slots) {
  const auto slot = [&](int64_t position) {
    return static_cast<int32_t>(block_table[static_cast<size_t>(position / block_size)] * block_size +
                                position % block_size);
  };
  const auto nodes = static_cast<int64_t>(parents.size());
  int64_t max_position = num_cached;
  for (int64_t r = 0; r < nodes; ++r) max_position = std::max(max_position, positions[static_cast<size_t>(r)]);
  TreeKeys tree;
  tree.key_begin = split_start(num_cached);
  tree.key_span = max_position + 1 - tree.key_begin;
  assert(static_cast<int64_t>(slots.size()) >= nodes * tree.key_span);
  tree.positions = positions.first(static_cast<size_t>(nodes));
  tree.slots = slots.first(static_cast<size_t>(nodes * tree.key_span));
  const int64_t cached_keys = num_cached - tree.key_begin;  // cached keys in the first table split
  for (int64_t r = 0; r < nodes; ++r) {
    int32_t* row = slots.data() + r * tree.key_span;
    for (int64_t k = 0; k < cached_keys; ++k) row[k] = slot(tree.key_begin + k);
    std::fill(row + cached_keys, row + tree.key_span, 0);
    // The node and its ancestors, each at the key its depth gives it (its position), from its slot.
    for (int64_t a = r; a >= 0; a = parents[static_cast<size_t>(a)])
      row[positions[static_cast<size_t>(a)] - tree.key_begin] = slot(num_cached + a);
  }
  return tree;
}

}  // namespace lemma::layers
