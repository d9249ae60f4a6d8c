// Prompt-lookup (n-gram) drafts for speculative decoding (G4): the tokens that followed the most
// recent earlier occurrence of the sequence's last n tokens (n from max_n down to min_n), as in
// vLLM's prompt lookup. Free to compute and often right on text that repeats its context (code,
// extraction, quoting). Pure; no allocation beyond `out`; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lemma::spec {

struct NgramConfig {
  int min_n = 2;  // the shortest suffix that may match
  int max_n = 4;  // the longest suffix tried first
};

// Writes up to `k` proposed next tokens for `tokens` (prompt then outputs) into `out` (cleared
// first); none when no suffix of min_n..max_n tokens occurred before.
void propose_ngram(std::span<const int32_t> tokens, const NgramConfig& config, int k, std::vector<int32_t>& out);

}  // namespace lemma::spec
