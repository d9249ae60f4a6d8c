// Draft-model speculation (G4): a smaller model with the target's vocabulary proposes the next K
// tokens of every running request, one batched forward per draft position over its own paged KV
// cache. Drafts are drawn from the draft's distribution under the request's sampling parameters
// (temperature, top-k/p, min-p, penalties): greedy requests get point masses, the others get their
// probability rows for exact rejection sampling. The same class serves layer-skip self-speculation
// with a model made of the target's first layers (Model::first_layers).
//
// With tree_width W > 1 the drafts are a token tree (G12): each draft position gets up to W
// candidates (the draft's W most likely tokens for greedy requests; otherwise W draws without
// replacement from its distribution, which the runner verifies by recursive rejection sampling), and
// only the first candidate (the one verified first, so the likeliest to be kept) is extended, as far
// as the node budget (the query's max_drafts) goes: one draft forward per level, as for a chain.
// A node's candidate count depends only on the budget, never on the draws, which exactness needs.
//
// Its cache follows each request lazily: it remembers which tokens it holds and, on the next call,
// keeps the longest prefix they share with the request's tokens (rejected drafts simply fall off),
// computing only the rest. A request the scheduler preempted keeps its draft cache until the pool
// needs its blocks. Single-threaded (the engine thread); the forward runs on its own thread team.
#pragma once

#include <cstdint>
#include <vector>

#include "lemma/model/model.h"
#include "lemma/sampling/sampler.h"
#include "lemma/sched/draft_source.h"
#include "lemma/spec/draft_cache_table.h"

namespace lemma::spec {

struct DraftModelConfig {
  int64_t num_blocks = 0;       // the draft's KV pool (blocks of block_size tokens)
  int64_t block_size = 16;
  int num_threads = 1;
  uint64_t default_seed = 0;    // as the runner's: requests without a seed use default_seed ^ id
  KvDtype kv_dtype = KvDtype::kF32;
  int tree_width = 1;           // candidates per draft position (1: a chain)
};

class DraftModelProposer final : public DraftSource {
 public:
  // Throws InvalidArgument for impossible sizes or a draft whose vocabulary differs from
  // `target_vocab_size`.
  DraftModelProposer(const Model& draft, int64_t target_vocab_size, const DraftModelConfig& config);

  void propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) override;
  void forget(uint64_t id) override;

  int64_t num_free_blocks() const { return table_.num_free_blocks(); }
  size_t num_tracked() const { return table_.num_tracked(); }

 private:
  struct State {
    std::vector<int32_t> cached;  // tokens whose K/V the draft cache holds, positions 0..
    std::vector<int32_t> blocks;
    uint64_t last_call = 0;
    void clear_tokens() { cached.clear(); }
  };
  // One query being drafted this call.
  struct Active {
    size_t query = 0;
    State* state = nullptr;
    Sampler sampler;
    std::vector<int32_t> tokens;  // the request's tokens, then the drafts so far
    int64_t computed = 0;         // tokens of `tokens` with K/V in the cache
    std::vector<float> probs;     // the drafts' rows (stochastic only)
    bool stopped = false;         // no finite logit to draw from: keeps the drafts it has
    int32_t spine = -1;           // the draft the next level's candidates hang under (-1: the last token)
  };
  // One batched forward of every active sequence's uncomputed tokens, then one draft each.
  void draft_round(std::vector<Active>& active, std::span<const DraftQuery> queries, std::vector<Drafts>& out);

  const Model& draft_;
  DraftModelConfig config_;
  KvCache cache_;
  ForwardWorkspace workspace_;
  DraftCacheTable<State> table_;  // the requests followed and their blocks
  ForwardBatch batch_;
  std::vector<float> logits_;
  // Up to `count` candidates of one position into `out`: the draft's best tokens (greedy), or draws
  // without replacement from row_probs_ (appending their rows to a.probs).
  void draw_candidates(Active& a, std::span<const float> logits, std::span<const int32_t> prompt,
                       std::span<const int32_t> outputs, int32_t count, std::vector<int32_t>& out);
  std::vector<float> row_probs_;
  std::vector<float> remaining_;   // row_probs_ less the candidates drawn so far
  std::vector<TokenLogprob> top_;  // greedy trees: the draft's best tokens
  std::vector<int32_t> candidates_;
  SamplerScratch scratch_;
};

}  // namespace lemma::spec
