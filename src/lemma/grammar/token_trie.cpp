#include "lemma/grammar/token_trie.h"

#include <algorithm>
#include <numeric>

namespace lemma::grammar {

TokenTrie::TokenTrie(const TokenVocabulary& vocab) {
  std::vector<int32_t> order;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (!vocab.bytes[static_cast<size_t>(id)].empty() && !vocab.special[static_cast<size_t>(id)]) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return vocab.bytes[static_cast<size_t>(a)] < vocab.bytes[static_cast<size_t>(b)];
  });
  std::vector<uint32_t> open;  // node index per depth-1 of the current path
  std::string path;
  auto close_to = [&](size_t depth) {
    while (open.size() > depth) {
      nodes_[open.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
      open.pop_back();
    }
  };
  for (int32_t id : order) {
    const std::string& s = vocab.bytes[static_cast<size_t>(id)];
    size_t common = 0;
    while (common < path.size() && common < s.size() && path[common] == s[common]) ++common;
    close_to(common);
    path.resize(common);
    for (size_t i = common; i < s.size(); ++i) {
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back({static_cast<unsigned char>(s[i]), static_cast<uint32_t>(i + 1), 0, 0, 0});
      path.push_back(s[i]);
    }
    max_depth_ = std::max(max_depth_, static_cast<uint32_t>(s.size()));
    // Sorted order puts equal strings together: their ids all end at this node.
    Node& end = nodes_[open.back()];
    if (end.first_token == end.last_token) end.first_token = static_cast<uint32_t>(token_ids_.size());
    token_ids_.push_back(id);
    end.last_token = static_cast<uint32_t>(token_ids_.size());
  }
  close_to(0);
}

}  // namespace lemma::grammar
