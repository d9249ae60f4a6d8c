// How a serving engine speculates (G4), and the factory that turns it into a DraftSource: prompt
// lookup (n-gram, as a chain or as a tree of several continuations), a draft model with the target's
// vocabulary, or layer-skip self-speculation (the target's first L layers with its own final norm and
// LM head as the draft), or DeepSeek-V3's multi-token-prediction module (spec/mtp_proposer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "lemma/model/model.h"
#include "lemma/model/mtp/mtp_module.h"
#include "lemma/sched/draft_source.h"
#include "lemma/spec/draft_model_proposer.h"
#include "lemma/spec/ngram_proposer.h"
#include "lemma/spec/ngram_tree_proposer.h"

namespace lemma::spec {

enum class SpeculativeMethod : uint8_t { kNone, kNgram, kDraftModel, kLayerSkip, kNgramTree, kMtp };

// "none", "ngram", "draft", "layer-skip", "ngram-tree", "mtp"; throws InvalidArgument for anything else.
SpeculativeMethod parse_speculative_method(std::string_view name);
std::string_view speculative_method_name(SpeculativeMethod method);

struct SpeculativeOptions {
  SpeculativeMethod method = SpeculativeMethod::kNone;
  int num_tokens = 0;                  // drafts per decoding request per step (K)
  NgramConfig ngram = {};              // kNgram, kNgramTree
  int tree_branches = 3;               // kNgramTree: continuations per tree
  int tree_width = 1;                  // kDraftModel, kLayerSkip: candidates per draft position (1: a chain)
  std::shared_ptr<const Model> draft_model = {};  // kDraftModel
  std::shared_ptr<const MtpModule> mtp_module = {};  // kMtp (G30): one draft per step
  int layers = 0;                      // kLayerSkip: how many of the target's first layers draft (0: half)
  int64_t draft_kv_blocks = 0;         // the draft's KV pool in blocks; 0: as many as the target's
  int disable_by_batch_size = 0;       // no drafts while more requests run (0: no limit; the CLI says 4)

  bool enabled() const { return method != SpeculativeMethod::kNone && num_tokens > 0; }
};

// The draft source for `options` (null when speculation is off). `draft` carries the engine's KV
// block size, threads, default seed and KV dtype, and the target's block count (used when
// options.draft_kv_blocks is 0). Throws InvalidArgument for impossible options (K outside [1, 16],
// a missing draft model, layers outside [0, target layers - 1], a one-layer target for layer-skip, a vocabulary mismatch,
// a tree width outside [1, 16], token trees (ngram-tree, tree width > 1) on a model with sliding-window layers).
std::unique_ptr<DraftSource> make_draft_source(const SpeculativeOptions& options, const Model& target,
                                               DraftModelConfig draft);

}  // namespace lemma::spec
