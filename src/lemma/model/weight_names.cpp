#include "lemma/model/weight_names.h"

#include <fmt/format.h>

namespace lemma {

namespace {

struct NamePair {
  const char* gguf;
  const char* hf;
};

// Per-layer suffixes after "blk.N." / "model.layers.N."; global names in full.
NamePair names_of(WeightRole role) {
  switch (role) {
    case WeightRole::kTokenEmbedding: return {"token_embd.weight", "model.embed_tokens.weight"};
    case WeightRole::kFinalNorm: return {"output_norm.weight", "model.norm.weight"};
    case WeightRole::kLmHead: return {"output.weight", "lm_head.weight"};
    case WeightRole::kAttnNorm: return {"attn_norm.weight", "input_layernorm.weight"};
    case WeightRole::kQ: return {"attn_q.weight", "self_attn.q_proj.weight"};
    case WeightRole::kK: return {"attn_k.weight", "self_attn.k_proj.weight"};
    case WeightRole::kV: return {"attn_v.weight", "self_attn.v_proj.weight"};
    case WeightRole::kO: return {"attn_output.weight", "self_attn.o_proj.weight"};
    case WeightRole::kQBias: return {"attn_q.bias", "self_attn.q_proj.bias"};
    case WeightRole::kKBias: return {"attn_k.bias", "self_attn.k_proj.bias"};
    case WeightRole::kVBias: return {"attn_v.bias", "self_attn.v_proj.bias"};
    case WeightRole::kQNorm: return {"attn_q_norm.weight", "self_attn.q_norm.weight"};
    case WeightRole::kKNorm: return {"attn_k_norm.weight", "self_attn.k_norm.weight"};
    case WeightRole::kFfnNorm: return {"ffn_norm.weight", "post_attention_layernorm.weight"};
    case WeightRole::kGate: return {"ffn_gate.weight", "mlp.gate_proj.weight"};
    case WeightRole::kUp: return {"ffn_up.weight", "mlp.up_proj.weight"};
    case WeightRole::kDown: return {"ffn_down.weight", "mlp.down_proj.weight"};
  }
  return {"?", "?"};
}

bool is_global(WeightRole role) {
  return role == WeightRole::kTokenEmbedding || role == WeightRole::kFinalNorm || role == WeightRole::kLmHead;
}

}  // namespace

std::string weight_name(WeightFormat format, WeightRole role, int64_t layer) {
  const NamePair n = names_of(role);
  const char* name = format == WeightFormat::kGguf ? n.gguf : n.hf;
  if (is_global(role)) return name;
  return format == WeightFormat::kGguf ? fmt::format("blk.{}.{}", layer, name)
                                       : fmt::format("model.layers.{}.{}", layer, name);
}

const char* to_string(WeightFormat format) { return format == WeightFormat::kGguf ? "gguf" : "safetensors"; }

}  // namespace lemma
