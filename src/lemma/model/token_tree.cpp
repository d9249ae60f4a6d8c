#include "lemma/model/token_tree.h"

#include <algorithm>

#include "lemma/base/error.h"

namespace lemma {

void validate_token_tree(std::span<const int32_t> parents, size_t sequence) {
  for (size_t i = 0; i < parents.size(); ++i) {
    const int32_t p = parents[i];
    if (p < -1 || p >= static_cast<int64_t>(i))
      fail<InvalidArgument>("forward: sequence {}: tree node {} has parent {}; a parent must be -1 or an earlier node",
                            sequence, i, p);
  }
}

void token_tree_depths(std::span<const int32_t> parents, std::span<int64_t> depths) {
  for (size_t i = 0; i < parents.size(); ++i)
    depths[i] = parents[i] < 0 ? 0 : depths[static_cast<size_t>(parents[i])] + 1;
}

std::vector<int32_t> token_tree_path(std::span<const int32_t> parents, int32_t node) {
  std::vector<int32_t> path;
  for (int32_t n = node; n >= 0; n = parents[static_cast<size_t>(n)]) path.push_back(n);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace lemma
