// Test helper: random token trees (tree speculation) given as parent indices, the shape
// SequenceInput::tree_parents takes: nodes in an order where parents precede children, at most
// `max_depth` levels and `max_branch` children per node (roots included), and their leaves.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace lemma::testing {

// Up to `max_nodes` nodes (fewer when the depth and branching limits leave no room); at least one.
// Each node picks a random parent among those with room (or -1), so the order is not breadth-first.
inline std::vector<int32_t> random_tree(std::mt19937& rng, int64_t max_nodes, int64_t max_depth, int64_t max_branch) {
  std::vector<int32_t> parents;
  std::vector<int64_t> depth, children;
  int64_t roots = 0;
  for (int64_t i = 0; i < max_nodes; ++i) {
    std::vector<int32_t> room;  // candidate parents; -1 = a new root
    if (roots < max_branch) room.push_back(-1);
    for (size_t p = 0; p < parents.size(); ++p)
      if (depth[p] + 1 < max_depth && children[p] < max_branch) room.push_back(static_cast<int32_t>(p));
    if (room.empty()) break;
    const int32_t parent = room[rng() % room.size()];
    parents.push_back(parent);
    depth.push_back(parent < 0 ? 0 : depth[static_cast<size_t>(parent)] + 1);
    children.push_back(0);
    (parent < 0 ? roots : children[static_cast<size_t>(parent)]) += 1;
  }
  return parents;
}

// Nodes with no child.
inline std::vector<int32_t> tree_leaves(const std::vector<int32_t>& parents) {
  std::vector<bool> has_child(parents.size(), false);
  for (int32_t p : parents)
    if (p >= 0) has_child[static_cast<size_t>(p)] = true;
  std::vector<int32_t> leaves;
  for (size_t i = 0; i < parents.size(); ++i)
    if (!has_child[i]) leaves.push_back(static_cast<int32_t>(i));
  return leaves;
}

}  // namespace lemma::testing
