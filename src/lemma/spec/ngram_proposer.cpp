#include "lemma/spec/ngram_proposer.h"

#include <algorithm>

namespace lemma::spec {

void propose_ngram(std::span<const int32_t> tokens, const NgramConfig& config, int k, std::vector<int32_t>& out) {
  out.clear();
  const auto size = static_cast<int64_t>(tokens.size());
  if (k <= 0) return;
  for (int n = std::min<int64_t>(config.max_n, size - 1); n >= std::max(1, config.min_n); --n) {
    const auto suffix = tokens.subspan(static_cast<size_t>(size - n));
    // The most recent earlier occurrence: its continuation is the likeliest to repeat.
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(k, size - from);
      out.assign(tokens.begin() + from, tokens.begin() + from + count);
      return;
    }
  }
}

}  // namespace lemma::spec

namespace lemma::spec {

void NgramProposer::propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) {
  out.resize(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    out[i].probs.reset();
    propose_ngram(queries[i].tokens, config_, queries[i].max_drafts, out[i].tokens);
  }
}

}  // namespace lemma::spec
