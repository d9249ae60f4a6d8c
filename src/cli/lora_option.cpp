#include "cli/lora_option.h"

#include <cstdio>

#include "lemma/base/error.h"

namespace lemma::cli {

void LoraFlags::add_to(CLI::App* sub, bool select) {
  sub->add_option("--lora-modules", modules, "LoRA adapters (PEFT directories) offered by name: name=path ...");
  sub->add_option("--max-loras", max_loras, "LoRA adapters kept in memory at once (least recently used go first)")
      ->capture_default_str();
  sub->add_option("--max-lora-rank", max_lora_rank, "Adapters of a larger rank are refused")->capture_default_str();
  if (select) {
    sub->add_option("--lora", lora, "Run on this adapter of --lora-modules");
  } else {
    sub->add_flag("--enable-lora", enable, "Take /v1/load_lora_adapter and /v1/unload_lora_adapter without --lora-modules");
  }
}

std::shared_ptr<LoraPool> LoraFlags::make_pool(const ModelConfig& config) const {
  if (modules.empty() && !enable && lora.empty()) return nullptr;
  auto pool = std::make_shared<LoraPool>(config, LoraPoolConfig{max_loras, max_lora_rank});
  for (const std::string& spec : modules) {
    const auto [name, path] = parse_lora_module(spec);
    pool->load(name, path);
  }
  return pool;
}

std::shared_ptr<const LoraAdapter> LoraFlags::selected(const ModelConfig& config) const {
  if (lora.empty()) return nullptr;
  const auto pool = make_pool(config);
  if (!pool->contains(lora)) fail<InvalidArgument>("--lora {}: no such adapter in --lora-modules", lora);
  return pool->acquire(lora);
}

}  // namespace lemma::cli
