#include "lemma/spec/ngram_tree_proposer.h"

#include <algorithm>

namespace lemma::spec {

namespace {

// Up to `branches` continuations (start, length) of matches of the sequence's suffixes, longest
// suffix first, then the most recent; none that equals or is a prefix of one kept before.
std::vector<std::span<const int32_t>> continuations(std::span<const int32_t> tokens, const NgramTreeConfig& config,
                                                    int k) {
  std::vector<std::span<const int32_t>> found;
  const auto size = static_cast<int64_t>(tokens.size());
  for (int n = static_cast<int>(std::min<int64_t>(config.ngram.max_n, size - 1)); n >= std::max(1, config.ngram.min_n);
       --n) {
    const auto suffix = tokens.subspan(static_cast<size_t>(size - n));
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const auto next = tokens.subspan(static_cast<size_t>(from), static_cast<size_t>(std::min<int64_t>(k, size - from)));
      const bool known = std::any_of(found.begin(), found.end(), [&](std::span<const int32_t> f) {
        return f.size() >= next.size() && std::equal(next.begin(), next.end(), f.begin());
      });
      if (known) continue;
      found.push_back(next);
      if (static_cast<int>(found.size()) == config.branches) return found;
    }
  }
  return found;
}

}  // namespace

void propose_ngram_tree(std::span<const int32_t> tokens, const NgramTreeConfig& config, int k,
                        std::vector<int32_t>& out_tokens, std::vector<int32_t>& out_parents) {
  out_tokens.clear();
  out_parents.clear();
  if (k <= 0 || config.branches <= 0) return;
  const auto branches = continuations(tokens, config, k);
  // last[b]: branch b's node at the previous level (-1 at the root; -2 once it ran out of budget).
  std::vector<int32_t> last(branches.size(), -1);
  for (size_t depth = 0;; ++depth) {
    bool grew = false;
    for (size_t b = 0; b < branches.size(); ++b) {
      if (depth >= branches[b].size() || last[b] == -2) continue;
      const int32_t token = branches[b][depth];
      int32_t node = -1;  // a node an earlier branch made for the same prefix
      for (size_t i = 0; i < out_tokens.size(); ++i)
        if (out_parents[i] == last[b] && out_tokens[i] == token) node = static_cast<int32_t>(i);
      if (node < 0 && static_cast<int>(out_tokens.size()) < k) {
        node = static_cast<int32_t>(out_tokens.size());
        out_tokens.push_back(token);
        out_parents.push_back(last[b]);
      }
      last[b] = node < 0 ? -2 : node;
      grew = grew || node >= 0;
    }
    if (!grew) return;
  }
}

void NgramTreeProposer::propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) {
  out.resize(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    out[i].probs.reset();
    propose_ngram_tree(queries[i].tokens, config_, queries[i].max_drafts, out[i].tokens, out[i].parents);
  }
}

}  // namespace lemma::spec
