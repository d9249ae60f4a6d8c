// Speculative decoding flags (vLLM's names), shared by generate, chat and serve:
// --speculative-method none|ngram|draft|layer-skip|mtp, --num-speculative-tokens K,
// --speculative-model M (draft), --speculative-layers L (layer-skip), --speculative-tree-width W
// (token trees of the draft's candidates, or ngram-tree's continuations), the n-gram lookup sizes and
// the draft's KV pool. Drafts are verified in the engine's forward; greedy and point-mass drafts give
// plain decoding's tokens exactly, stochastic drafts its distribution (spec/speculative_options.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "lemma/spec/speculative_options.h"

namespace lemma::cli {

struct SpeculativeFlags {
  std::string method = "none";  // none | ngram | draft | layer-skip
  int num_tokens = 4;           // drafts per step when a method is on
  int ngram_min = 2, ngram_max = 4;
  std::string model;            // draft: its path
  int layers = 0;               // layer-skip: the target's first layers that draft (0: half of them)
  int tree_width = 0;           // candidates per draft position (draft, layer-skip: 1) or continuations
                                // (ngram-tree: 3); 0: the method's default
  int64_t draft_kv_tokens = 0;  // the draft's KV pool in tokens (0: as large as the target's)
  int disable_by_batch_size = 4;  // no drafts while more requests run (0: no limit)
  std::string target_model;     // set by the command: mtp opens the MTP module (G30) beside it

  void add_to(CLI::App* sub);
  // Throws InvalidArgument naming the flag for an unknown method or bad sizes; opens the draft model
  // (errors name its path). `block_size` converts --speculative-kv-tokens into blocks.
  spec::SpeculativeOptions to_options(int64_t block_size) const;
};

}  // namespace lemma::cli
