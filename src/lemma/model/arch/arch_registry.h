// The registry of supported architectures: one ArchSpec per file in arch/, listed once in
// arch_registry.cpp. Format readers look an architecture up here instead of switching on names.
// Immutable static data; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lemma/model/model_config.h"

namespace lemma {

struct ArchSpec {
  std::string_view name;                            // ModelConfig::arch
  std::vector<std::string_view> hf_architectures;   // config.json "architectures" entries
  std::vector<std::string_view> hf_model_types;     // config.json "model_type" values
  std::string_view gguf_arch;                       // general.architecture ("" = none)
  RopeLayout gguf_rope_layout = RopeLayout::kInterleaved;  // layout of q/k rows in that GGUF arch
  bool qkv_bias = false;                            // q/k/v projections carry biases
  bool qk_norm = false;                             // per-head q/k RMSNorm
  // A GGUF of this arch with <arch>.expert_count but no expert_weights_norm key renormalises its
  // top-k weights (llama.cpp's per-arch rule: llama (Mixtral) and qwen3moe yes, qwen2moe no).
  bool gguf_moe_normalize_top_k = false;
  // Reads the fields only this architecture has (after the common ones) and rejects values that
  // would change the math in ways lemma does not implement. May be null.
  void (*read_hf_fields)(const nlohmann::json& config_json, ModelConfig& config) = nullptr;
};

std::span<const ArchSpec* const> all_architectures();
// nullptr when unknown.
const ArchSpec* find_arch_by_name(std::string_view name);
const ArchSpec* find_arch_by_hf(std::string_view hf_architecture_or_model_type);
const ArchSpec* find_arch_by_gguf(std::string_view gguf_arch);
// "llama, mistral, qwen2, qwen3" for error messages.
std::string supported_arch_names();

}  // namespace lemma
