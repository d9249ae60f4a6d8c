// Token trees (tree speculation, G12): a sequence's new tokens given as a tree by parent indices
// (SequenceInput::tree_parents: -1 for a child of the last cached token, else an earlier index).
// Checks such a tree, gives its nodes' depths and the path down to a node. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lemma {

// Throws InvalidArgument naming `sequence` (the batch index, for the message) and the first bad
// index unless every parents[i] is -1 or lies in [0, i) (parents precede children, so no cycles).
void validate_token_tree(std::span<const int32_t> parents, size_t sequence);

// depths[i] = number of ancestors of node i among the new tokens (roots: 0). `parents` valid;
// depths.size() == parents.size().
void token_tree_depths(std::span<const int32_t> parents, std::span<int64_t> depths);

// The nodes from a root down to `node`, root first (node's depth + 1 entries). `parents` valid.
std::vector<int32_t> token_tree_path(std::span<const int32_t> parents, int32_t node);

}  // namespace lemma
