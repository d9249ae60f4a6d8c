// LoRA flags (G29, vLLM's names), shared by serve, generate and chat: --lora-modules name=path ...
// (adapters offered by name), --max-loras N (in memory at once), --max-lora-rank R (larger refused),
// --enable-lora (serve: the load/unload endpoints without start-time modules); generate and chat
// also take --lora NAME (which of the modules to run on).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "lemma/engine/lora_pool.h"
#include "lemma/model/model_config.h"

namespace lemma::cli {

struct LoraFlags {
  std::vector<std::string> modules;  // name=path
  int64_t max_loras = 8;
  int64_t max_lora_rank = 64;
  bool enable = false;  // serve only
  std::string lora;     // generate/chat only: the module to run on

  // `select`: add --lora NAME (generate/chat); else --enable-lora (serve).
  void add_to(CLI::App* sub, bool select);
  // The pool with every module loaded (errors name the module's files), or null when there is
  // nothing to offer (no modules, no --enable-lora).
  std::shared_ptr<LoraPool> make_pool(const ModelConfig& config) const;
  // generate/chat: the adapter --lora names, or null without --lora. Throws InvalidArgument when
  // --lora names no module.
  std::shared_ptr<const LoraAdapter> selected(const ModelConfig& config) const;
};

}  // namespace lemma::cli
