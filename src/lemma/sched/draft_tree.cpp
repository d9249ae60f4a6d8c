#include "lemma/sched/draft_tree.h"

#include <algorithm>
#include <vector>

namespace lemma {

int32_t find_draft_child(std::span<const int32_t> parents, std::span<const int32_t> drafts, int32_t parent,
                         int32_t token) {
  const auto n = static_cast<int32_t>(drafts.size());
  if (parents.empty()) return parent + 1 < n && drafts[static_cast<size_t>(parent + 1)] == token ? parent + 1 : -1;
  for (int32_t i = parent + 1; i < n; ++i)  // children come after their parent
    if (parents[static_cast<size_t>(i)] == parent && drafts[static_cast<size_t>(i)] == token) return i;
  return -1;
}

void draft_children(std::span<const int32_t> parents, int64_t num_drafts, int32_t parent, std::vector<int32_t>& out) {
  out.clear();
  if (parents.empty()) {
    if (parent + 1 < num_drafts) out.push_back(parent + 1);
    return;
  }
  for (int32_t i = parent + 1; i < static_cast<int32_t>(parents.size()); ++i)
    if (parents[static_cast<size_t>(i)] == parent) out.push_back(i);
}

int64_t draft_tree_levels(std::span<const int32_t> parents, int64_t num_drafts) {
  if (parents.empty()) return num_drafts;
  std::vector<int64_t> depth(parents.size());
  int64_t levels = 0;
  for (size_t i = 0; i < parents.size(); ++i) {
    depth[i] = parents[i] < 0 ? 1 : depth[static_cast<size_t>(parents[i])] + 1;
    levels = std::max(levels, depth[i]);
  }
  return levels;
}

bool is_valid_draft_tree(std::span<const int32_t> parents) {
  for (size_t i = 0; i < parents.size(); ++i)
    if (parents[i] < -1 || parents[i] >= static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace lemma
