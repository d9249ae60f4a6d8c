// The tensors of one multi-head latent attention layer (G28): the query path (q_proj, or q_a_proj ->
// RMSNorm -> q_b_proj when q_lora_rank > 0), the joint down-projection kv_a_proj_with_mqa to
// [c_kv | k_pe], c_kv's RMSNorm, the up-projection kv_b_proj [heads x (nope + v), kv_lora_rank] and
// o_proj. For absorbed decode kv_b_proj's two halves are also kept per head as f32 copies made at
// load: W_UK^T [heads, kv_lora_rank, nope] (folded into the query) and W_UV [heads, v, kv_lora_rank]
// (applied after attention over the latent). Immutable after load.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lemma/model/model_config.h"
#include "lemma/model/weight_names.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma {

struct MlaLayerWeights {
  TensorView q;                  // [heads * (nope + rope), hidden]; null with q_lora
  TensorView q_a;                // [q_lora_rank, hidden]; null without q_lora
  std::vector<float> q_a_norm;   // [q_lora_rank] or empty
  TensorView q_b;                // [heads * (nope + rope), q_lora_rank]; null without q_lora
  TensorView kv_a;               // [kv_lora_rank + rope, hidden]
  std::vector<float> kv_a_norm;  // [kv_lora_rank]
  TensorView kv_b;               // [heads * (nope + v), kv_lora_rank]
  TensorView o;                  // [hidden, heads * v]
  std::vector<float> w_uk_t;     // [heads, kv_lora_rank, nope] f32: W_UK transposed per head
  std::vector<float> w_uv;       // [heads, v, kv_lora_rank] f32

  TensorView w_uk_t_view(int64_t head, const MlaConfig& m) const;  // [kv_lora_rank, nope] f32
  TensorView w_uv_view(int64_t head, const MlaConfig& m) const;    // [v, kv_lora_rank] f32
};

// GGUF (llama.cpp deepseek2) or HF name of an MLA tensor of layer `layer`: suffix pairs such as
// ("attn_kv_b.weight", "self_attn.kv_b_proj.weight").
std::string mla_tensor_name(WeightFormat format, const char* gguf_suffix, const char* hf_suffix, int64_t layer);

// Throws FormatError naming a missing or misshapen tensor (llama.cpp's newer split attn_k_b/attn_v_b
// layout is named as unsupported), Unsupported for a dtype the linears cannot multiply.
using MlaTensorLookup = std::function<std::optional<TensorView>(const std::string& name)>;
MlaLayerWeights load_mla_layer(const ModelConfig& config, WeightFormat format, const MlaTensorLookup& lookup,
                               int64_t layer);

}  // namespace lemma
