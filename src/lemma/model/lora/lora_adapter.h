// LoraAdapter: one PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors) loaded for a
// model: per layer and projection the down matrix A [r, in] and the up matrix B (transposed, [r, out])
// in f32, B already multiplied by the scaling (lora_alpha / r, or lora_alpha / sqrt(r) with rsLoRA), so that
// y = x . W^T + (x . A^T) . B^T. Immutable after load; thread-safe to read; shared by shared_ptr
// between the pool that holds it and the requests that run on it (unloading never frees weights a
// running request still reads).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lemma/model/model_config.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma {

// The linears a LoRA adapter may target, by their PEFT (Hugging Face) module names.
enum class LoraTarget : uint8_t { kQ, kK, kV, kO, kGate, kUp, kDown };
inline constexpr size_t kNumLoraTargets = 7;
const char* lora_target_name(LoraTarget target);  // "q_proj", ...
std::optional<LoraTarget> lora_target_from_name(const std::string& module);

// One adapted linear: f32 views into the adapter's storage. B is kept transposed so that the
// expand adds rank contiguous rows into each output row (lora_delta.h).
struct LoraMatrices {
  TensorView a;   // lora_A: [rank, in]
  TensorView bt;  // (lora_B * scaling)^T: [rank, out]
  int64_t rank = 0;
  int64_t out_features() const { return bt.shape[1]; }
};

struct LoraAdapter {
  std::string name;             // the served name (empty for a directory loaded by path only)
  std::filesystem::path dir;
  uint64_t id = 0;              // unique per load in this process (prefix-cache key, logs)
  int64_t rank = 0;             // the largest rank of its matrices
  double lora_alpha = 0.0;
  bool use_rslora = false;
  std::vector<std::string> target_modules;
  // [layer][target]: absent where the adapter leaves that linear alone.
  std::vector<std::array<std::optional<LoraMatrices>, kNumLoraTargets>> layers;
  std::vector<std::vector<float>> storage;  // owns what the views point at
  double load_seconds = 0.0;

  const LoraMatrices* find(int64_t layer, LoraTarget target) const {
    const auto& slot = layers[static_cast<size_t>(layer)][static_cast<size_t>(target)];
    return slot ? &*slot : nullptr;
  }
  uint64_t bytes() const;
  // The scaling of a matrix of this rank (lora_alpha / r, or / sqrt(r) with rsLoRA).
  double scaling(int64_t matrix_rank) const;
};

// The prefix-cache extra key of an adapter (unique per load, so a reloaded adapter of the same
// name never reuses the K/V of the weights it replaced).
inline uint64_t lora_prefix_key(const LoraAdapter& adapter) { return 0x4c6f5241000000ull ^ (adapter.id << 8); }

struct LoraLoadOptions {
  int64_t max_rank = 0;  // > 0: a rank above it is refused (InvalidArgument naming both)
};

// Loads `dir` for a model of `config` (a GGUF llama model's interleaved-RoPE q/k row order is
// applied to B, as to the base weights). Throws IoError / FormatError naming the file for a missing or
// malformed file, FormatError naming the tensor for a wrong shape or a missing half of a pair,
// Unsupported naming the module for targets lemma cannot apply (embeddings, lm_head, DoRA, biases,
// modules_to_save, alpha_pattern, fan_in_fan_out), InvalidArgument for a rank above max_rank.
LoraAdapter load_lora_adapter(const std::filesystem::path& dir, const ModelConfig& config,
                              const LoraLoadOptions& options = {});

}  // namespace lemma
