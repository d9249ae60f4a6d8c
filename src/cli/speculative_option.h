// --speculative-method and --num-speculative-tokens (vLLM's names), shared by generate, chat and
// serve: prompt-lookup (n-gram) drafts verified in the engine's forward (sched/scheduler.h's
// SpeculativeConfig). Outputs are the tokens plain decoding gives; only the steps change.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "lemma/sched/scheduler.h"

namespace lemma::cli {

struct SpeculativeFlags {
  std::string method = "none";  // none | ngram
  int num_tokens = 4;           // drafts per step when a method is on
  int ngram_min = 2, ngram_max = 4;

  void add_to(CLI::App* sub);
  // Throws InvalidArgument naming the flag for an unknown or not yet available method or bad sizes.
  SpeculativeConfig to_config() const;
};

}  // namespace lemma::cli
