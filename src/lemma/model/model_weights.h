// ModelWeights: the tensors of a Llama-family model, found by name (weight_names.h) and checked
// against the ModelConfig. Matrices stay TensorViews in their file dtype (usually over the mmap);
// only 1-D tensors (norm weights, biases) are copied to f32 vectors at load. Immutable after
// load; thread-safe to read. The views are valid while the file that owns them lives.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lemma/model/layers/mla_weights.h"
#include "lemma/model/model_config.h"
#include "lemma/model/moe/moe_weights.h"
#include "lemma/model/weight_names.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma {

// A matrix's input order: GPTQ act-order weights are served with their inputs sorted by group
// (quant/hf_quantized_weights.h), so their matmul reads x[:, order]. Empty: x as it is.
using InputOrder = std::vector<int32_t>;

struct LayerWeights {
  std::vector<float> attn_norm;       // [hidden]
  TensorView q, k, v, o;              // [q_dim, hidden], [kv_dim, hidden] x2, [hidden, q_dim]; null with MLA
  MlaLayerWeights mla;                // latent attention (ModelConfig::mla enabled) only
  std::vector<float> q_bias, k_bias, v_bias;  // [q_dim], [kv_dim], [kv_dim] or empty
  std::vector<float> q_norm, k_norm;  // [head_dim] or empty
  std::vector<float> ffn_norm;        // [hidden]
  TensorView gate, up, down;          // [ffn, hidden] x2, [hidden, ffn]; null in MoE layers
  MoeLayerWeights moe;                // MoE layers (ModelConfig::moe.is_moe_layer) only
  InputOrder q_order, k_order, v_order, o_order, gate_order, up_order, down_order;  // usually empty
};

struct ModelWeights {
  TensorView token_embedding;    // [vocab, hidden]
  std::vector<float> final_norm;  // [hidden]
  TensorView lm_head;            // [vocab, hidden] (= token_embedding when tied)
  InputOrder lm_head_order;      // usually empty
  std::vector<LayerWeights> layers;

  // The first layer's query-side matrix (q, or MLA's kv_a): its dtype and format stand for the
  // model's (default KV cache dtype, sampling precision, bench labels).
  const TensorView& attention_matrix() const {
    const LayerWeights& l = layers.at(0);
    return l.q.data != nullptr ? l.q : l.mla.kv_a;
  }
};

// Looks a tensor up by name; nullopt when absent.
using TensorLookup = std::function<std::optional<TensorView>(const std::string& name)>;

// A matrix "<base>.weight" has an input order when the lookup finds "<base>.input_order" (I32 [K]).
// Throws FormatError naming the tensor when one is missing or has the wrong shape (or an input
// order is not a permutation), Unsupported for weight dtypes lemma cannot multiply and for an
// input order on the token embedding (its rows are read, not multiplied).
ModelWeights load_model_weights(const ModelConfig& config, WeightFormat format, const TensorLookup& lookup);

}  // namespace lemma
