// Prompt-lookup drafts as a token tree (tree speculation, G12): the continuations of up to
// `branches` earlier occurrences of the sequence's last n tokens (longest n first, then the most
// recent), merged where they agree into a tree under the last token. Where text repeats in more than
// one way, the target confirms whichever continuation it takes; all are verified in one forward
// (model/forward_batch.h's tree input). Point masses: the runner keeps the path its samples follow.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/sched/draft_source.h"
#include "lemma/spec/ngram_proposer.h"

namespace lemma::spec {

struct NgramTreeConfig {
  NgramConfig ngram;  // which suffixes may match
  int branches = 3;   // distinct continuations at most
};

// Writes at most `k` draft nodes into tokens / parents (cleared first; parents[i] is -1 or an
// earlier node, sched/draft_tree.h): each continuation (up to k tokens) inserted one level at a time
// across the branches, so the budget goes to the shallow levels of every branch first; a
// continuation equal to or a prefix of an earlier one is skipped. Pure; thread-safe.
void propose_ngram_tree(std::span<const int32_t> tokens, const NgramTreeConfig& config, int k,
                        std::vector<int32_t>& out_tokens, std::vector<int32_t>& out_parents);

class NgramTreeProposer final : public DraftSource {
 public:
  explicit NgramTreeProposer(const NgramTreeConfig& config) : config_(config) {}
  void propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) override;

 private:
  NgramTreeConfig config_;
};

}  // namespace lemma::spec
