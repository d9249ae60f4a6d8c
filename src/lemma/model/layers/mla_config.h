// MlaConfig: the multi-head latent attention part of a ModelConfig (G28, DeepSeek-V2/V3). A token's
// keys and values are projected down to one latent row c_kv [kv_lora_rank] (RMSNorm'd) plus one
// decoupled RoPE key k_pe [qk_rope_head_dim] shared by all heads; the KV cache stores only those
// (kv_lora_rank + qk_rope_head_dim values per token and layer). Read by arch/deepseek*.cpp and
// config_from_gguf.cpp. Plain data; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>

namespace lemma {

// How a sequence attends in an MLA layer (RuntimeOptions::mla_attention; layers/mla_attention.h).
enum class MlaMode : uint8_t {
  kAuto,          // materialised for a sequence with >= kMlaMaterialiseMinTokens new tokens, else absorbed
  kAbsorbed,      // always absorbed (weight absorption over the latent)
  kMaterialised,  // always materialised (per-head K/V rebuilt from the latent; token trees still absorb)
};

struct MlaConfig {
  int64_t q_lora_rank = 0;       // 0: q = q_proj(x) (V2-Lite); else q_b(RMSNorm(q_a(x))) (V2, V3)
  int64_t kv_lora_rank = 0;      // latent width; 0 = not an MLA model
  int64_t qk_nope_head_dim = 0;  // per-head query/key part without RoPE
  int64_t qk_rope_head_dim = 0;  // per-head query part with RoPE (and the shared k_pe)
  int64_t v_head_dim = 0;        // per-head value width (o_proj reads num_heads x this)
  // Softmax scale: (nope + rope)^-0.5 x mscale^2 with YaRN's mscale = 0.1 mscale_all_dim ln(factor) + 1
  // (DeepSeek's modeling_deepseek.py, vLLM, llama.cpp). Set by the readers.
  float softmax_scale = 0.0f;

  bool enabled() const { return kv_lora_rank > 0; }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  // Values per token and layer in the latent cache: [c_kv | k_pe].
  int64_t latent_dim() const { return kv_lora_rank + qk_rope_head_dim; }
  // Throws InvalidArgument naming the first inconsistent field (`arch` for the message).
  void validate(const std::string& arch) const;
  // ", mla kv_lora 32 (+rope 8), q_lora 48, nope 16, v 16" or "".
  std::string summary() const;
};

// DeepSeek's softmax scale for these head sizes and YaRN's (factor, mscale_all_dim); mscale_all_dim
// 0 or factor <= 1: no correction.
float mla_softmax_scale(int64_t qk_head_dim, double yarn_factor, double mscale_all_dim);

}  // namespace lemma
