// Multi-token-prediction speculation (G30): DeepSeek-V3's MTP module proposes one draft per step,
// the token after next, from the target's final-normed hidden state at the last position and the
// last token (model/mtp/mtp_module.h), as a point mass (its argmax) that the runner's verifier keeps
// only while its own sample equals it: plain decoding's tokens exactly.
//
// The runner does not hand the target's hidden states to draft sources (DraftSource sees tokens
// only), so this proposer recomputes them: it keeps its own copy of the target's KV cache and of
// the MTP layer's latent cache per request, following each request's accepted tokens lazily (as
// DraftModelProposer), and runs the target's layers once more over each newly accepted token
// (no LM head) before the MTP layer. The drafts and so the acceptance are those of real MTP; the
// recomputation costs about one more target forward per step, so this shows acceptance, not speed.
// Single-threaded (the engine thread); the forwards run on its own thread team.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lemma/model/model.h"
#include "lemma/model/mtp/mtp_module.h"
#include "lemma/sched/draft_source.h"
#include "lemma/spec/draft_cache_table.h"
#include "lemma/spec/draft_model_proposer.h"

namespace lemma::spec {

class MtpProposer final : public DraftSource {
 public:
  // config: its KV pool (blocks shared by the target copy and the MTP cache), threads, KV dtype.
  // Throws InvalidArgument for impossible sizes or a module of another vocabulary.
  MtpProposer(const Model& target, std::shared_ptr<const MtpModule> mtp, const DraftModelConfig& config);

  void propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) override;
  void forget(uint64_t id) override;

  size_t num_tracked() const { return table_.num_tracked(); }
  int64_t num_free_blocks() const { return table_.num_free_blocks(); }

 private:
  struct State {
    std::vector<int32_t> seen;     // t_0 .. t_m: target K/V for positions 0..m-1, MTP K/V for 0..m-1 (which read t_1..t_m)
    std::vector<int32_t> blocks;   // one table for both caches
    uint64_t last_call = 0;
    void clear_tokens() { seen.clear(); }
  };

  const Model& target_;
  std::shared_ptr<const MtpModule> mtp_;
  DraftModelConfig config_;
  KvCache target_cache_, mtp_cache_;
  ForwardWorkspace target_ws_, mtp_ws_;
  DraftCacheTable<State> table_;  // the requests followed and their blocks
};

}  // namespace lemma::spec
