// Golden-test support for LoRA (G29): the PEFT adapters lora-{a,b,c} of shared/tools/
// make_lora_adapters.py for a tiny preset, regenerated once per build tree beside the base model,
// and their golden JSON (shared/data/golden/lora/<preset>-lora-X.json, merged-weights float64).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "golden_models.h"

namespace lemma::testing {

struct LoraFiles {
  PresetFiles base;
  std::filesystem::path adapters;  // holds lora-a, lora-b, lora-c
};

// Generates the f32 base preset and its adapters unless there; nullopt with `why` when the
// generators cannot run. Checks nothing: compare the sha256s of adapter_files() first.
std::optional<LoraFiles> ensure_lora_adapters(const std::string& preset, std::string& why);

// shared/data/golden/lora/<preset>-<adapter>.json (adapter "lora-a", ...).
const nlohmann::json& lora_golden(const std::string& preset, const std::string& adapter);

// Empty when every file of the golden's adapter under `adapters` has the recorded sha256 (or
// sha256sum is missing outside CI); else what differs.
std::string check_adapter_files(const nlohmann::json& golden, const std::filesystem::path& adapters);

}  // namespace lemma::testing
