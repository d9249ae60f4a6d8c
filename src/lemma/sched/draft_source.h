// DraftSource: where the scheduler's speculative drafts come from (G4). The scheduler asks once per
// step, for every running request whose next step is one decode token, with the most drafts it could
// use; the engine plugs in a proposer from spec/ (prompt lookup, a draft model, the model's own first
// layers). Drafts may come with the draft's probability rows (a stochastic proposer: the runner then
// verifies them by exact rejection sampling) or without (point masses: the runner keeps a draft while
// its own sample equals it, which yields plain decoding's tokens exactly).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lemma/sampling/sampling_params.h"

namespace lemma {

struct DraftQuery {
  uint64_t id = 0;                    // the request (RequestId)
  std::span<const int32_t> tokens;    // prompt then outputs, all known tokens
  int64_t num_prompt_tokens = 0;
  int32_t max_drafts = 0;             // propose at most this many (fewer, or none, is fine); tree nodes count
  const SamplingParams* sampling = nullptr;
};

struct Drafts {
  std::vector<int32_t> tokens;
  // Empty: a chain (each draft follows the one before). Else a token tree (G12), one entry per draft:
  // the index of its parent draft, or -1 for a child of the last token; parents precede children
  // (sched/draft_tree.h). Truncating a tree to its first k drafts leaves a tree. A stochastic tree
  // (with probs) draws the children of each node without replacement from one distribution, in
  // index order, so that a node's first j children are still such a draw.
  std::vector<int32_t> parents = {};
  // [tokens.size(), vocab] row-major: the distribution each draft was drawn from (in a tree, the one
  // at its parent, before its earlier siblings were removed: equal rows for siblings); null for point
  // masses (deterministic drafts). Shared so a plan carries it without a copy.
  std::shared_ptr<const std::vector<float>> probs;
};

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // out[i] answers queries[i] (out is resized to queries.size()).
  virtual void propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) = 0;
  // A request ended: drop whatever the source keeps for it (idempotent).
  virtual void forget(uint64_t id) { (void)id; }
};

}  // namespace lemma
