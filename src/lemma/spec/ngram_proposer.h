// Prompt-lookup (n-gram) drafts for speculative decoding (G4): the tokens that followed the most
// recent earlier occurrence of the sequence's last n tokens (n from max_n down to min_n), as in
// vLLM's prompt lookup. Free to compute and often right on text that repeats its context (code,
// extraction, quoting). Point masses: the runner keeps them while its samples agree.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/sched/draft_source.h"

namespace lemma::spec {

struct NgramConfig {
  int min_n = 2;  // the shortest suffix that may match
  int max_n = 4;  // the longest suffix tried first
};

// Writes up to `k` proposed next tokens for `tokens` (prompt then outputs) into `out` (cleared
// first); none when no suffix of min_n..max_n tokens occurred before. Pure; thread-safe.
void propose_ngram(std::span<const int32_t> tokens, const NgramConfig& config, int k, std::vector<int32_t>& out);

class NgramProposer final : public DraftSource {
 public:
  explicit NgramProposer(const NgramConfig& config) : config_(config) {}
  void propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) override;

 private:
  NgramConfig config_;
};

}  // namespace lemma::spec
