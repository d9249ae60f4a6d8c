// ModelConfig: the hyper-parameters of a decoder-only transformer (Llama family: Llama, Mistral,
// Qwen2, Qwen3), independent of the file format they came from. Plain data; thread-safe to read.
// Built by config_from_hf_json() / config_from_gguf(); validate() checks internal consistency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lemma/model/layers/mla_config.h"
#include "lemma/model/moe/moe_config.h"
#include "lemma/model/rope_scaling.h"

namespace lemma {

struct ModelConfig {
  std::string arch;  // registry name: "llama", "mistral", "qwen2", "qwen3"

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;     // query heads
  int64_t num_kv_heads = 0;  // = num_heads (MHA), 1 (MQA) or a divisor (GQA)
  int64_t head_dim = 0;      // may differ from hidden_size / num_heads (Qwen3)
  int64_t max_position_embeddings = 0;
  float rms_norm_eps = 1e-5f;

  RopeConfig rope;

  bool tie_word_embeddings = false;  // LM head = token embedding
  bool qkv_bias = false;             // q/k/v projections carry biases (Qwen2)
  bool qk_norm = false;              // per-head RMSNorm on q and k before RoPE (Qwen3)

  // Keys visible to a query at position p in layer l: those at positions p' with
  // p - p' < sliding_window[l] (0 = unlimited). Empty = no sliding window anywhere.
  std::vector<int64_t> sliding_window;

  MoeConfig moe;  // mixture of experts (G27); num_experts 0 = every layer a dense SwiGLU MLP
  // Multi-head latent attention (G28, DeepSeek): when enabled, head_dim = qk_nope + qk_rope (the
  // query/key width), num_kv_heads = num_heads, rope.rotary_dim = qk_rope, and the cache is latent.
  MlaConfig mla;
  // DeepSeek-V3 multi-token-prediction modules stored after the main layers (G30; model/mtp/).
  int64_t num_nextn_predict_layers = 0;

  std::optional<int32_t> bos_token_id;
  std::optional<int32_t> eos_token_id;

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  // The KV cache's shape per token and layer: [cache_kv_heads, cache_head_dim]. An MLA model caches
  // one latent row [c_kv | k_pe] instead of per-head K and V (KvCache::for_model).
  int64_t cache_kv_heads() const { return mla.enabled() ? 1 : num_kv_heads; }
  int64_t cache_head_dim() const { return mla.enabled() ? mla.latent_dim() : head_dim; }
  int64_t layer_sliding_window(int64_t layer) const {
    return sliding_window.empty() ? 0 : sliding_window[static_cast<size_t>(layer)];
  }
  // The earliest position any layer still attends to when the first new token is at `position`:
  // 0 unless every layer has a sliding window, else position - max window + 1 (clamped to 0).
  // KV blocks wholly before it are never read again and may be freed (block table entry -1).
  int64_t first_attended_position(int64_t position) const;
  // Throws InvalidArgument naming the first inconsistent field.
  void validate() const;
  // One line for logs: "llama: 2 layers, hidden 64, 4 heads x 16 (2 kv), vocab 512, rope default".
  std::string summary() const;
};

}  // namespace lemma
