#include "lemma/model/model_weights.h"

#include <cstring>

#include "lemma/base/error.h"
#include "lemma/model/layers/linear.h"

namespace lemma {

namespace {

class Loader {
 public:
  Loader(WeightFormat format, const TensorLookup& lookup) : format_(format), lookup_(lookup) {}

  TensorView matrix(WeightRole role, int64_t layer, int64_t rows, int64_t cols) {
    const std::string name = weight_name(format_, role, layer);
    const TensorView t = require(name);
    if (t.shape.rank != 2 || t.shape[0] != rows || t.shape[1] != cols)
      fail<FormatError>("tensor {}: expected shape [{}, {}], got {}", name, rows, cols, t.shape.to_string());
    if (!layers::is_supported_weight_dtype(t.dtype))
      fail<Unsupported>("tensor {}: weight dtype {} is not supported", name, dtype_name(t.dtype));
    return t;
  }

  // The matrix's input order ("<base>.input_order" beside "<base>.weight"), or empty.
  InputOrder input_order(WeightRole role, int64_t layer, int64_t cols) {
    std::string name = weight_name(format_, role, layer);
    if (!name.ends_with(".weight")) return {};
    name = name.substr(0, name.size() - 7) + ".input_order";
    const auto t = lookup_(name);
    if (!t) return {};
    if (t->dtype != DType::kI32 || t->shape.rank != 1 || t->shape[0] != cols)
      fail<FormatError>("tensor {}: expected I32 [{}], got {} {}", name, cols, dtype_name(t->dtype), t->shape.to_string());
    InputOrder order(static_cast<size_t>(cols));
    std::memcpy(order.data(), t->data, order.size() * sizeof(int32_t));
    std::vector<bool> seen(order.size(), false);
    for (size_t j = 0; j < order.size(); ++j) {
      const int32_t k = order[j];
      if (k < 0 || k >= cols || seen[static_cast<size_t>(k)])
        fail<FormatError>("tensor {}: entry {} = {} makes it no permutation of 0..{}", name, j, k, cols - 1);
      seen[static_cast<size_t>(k)] = true;
    }
    return order;
  }

  std::vector<float> vector(WeightRole role, int64_t layer, int64_t length) {
    const std::string name = weight_name(format_, role, layer);
    return to_f32(name, require(name), length);
  }

 private:
  TensorView require(const std::string& name) {
    const auto t = lookup_(name);
    if (!t) fail<FormatError>("{} model: missing tensor {}", to_string(format_), name);
    return *t;
  }

  static std::vector<float> to_f32(const std::string& name, const TensorView& t, int64_t length) {
    if (t.shape.rank != 1 || t.shape[0] != length)
      fail<FormatError>("tensor {}: expected shape [{}], got {}", name, length, t.shape.to_string());
    std::vector<float> out(static_cast<size_t>(length));
    layers::read_all_f32(t, out);
    return out;
  }

  WeightFormat format_;
  const TensorLookup& lookup_;
};

}  // namespace

ModelWeights load_model_weights(const ModelConfig& c, WeightFormat format, const TensorLookup& lookup) {
  Loader load(format, lookup);
  ModelWeights w;
  const int64_t h = c.hidden_size;
  w.token_embedding = load.matrix(WeightRole::kTokenEmbedding, 0, c.vocab_size, h);
  if (!load.input_order(WeightRole::kTokenEmbedding, 0, h).empty())
    fail<Unsupported>("tensor {}: a token embedding stored with an input order (act-order) cannot be looked up",
                      weight_name(format, WeightRole::kTokenEmbedding));
  w.final_norm = load.vector(WeightRole::kFinalNorm, 0, h);
  if (c.tie_word_embeddings) {
    w.lm_head = w.token_embedding;
  } else {
    w.lm_head = load.matrix(WeightRole::kLmHead, 0, c.vocab_size, h);
    w.lm_head_order = load.input_order(WeightRole::kLmHead, 0, h);
  }
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    lw.attn_norm = load.vector(WeightRole::kAttnNorm, l, h);
    const bool mla = c.mla.enabled();
    if (mla) {
      lw.mla = load_mla_layer(c, format, lookup, l);
    } else {
      lw.q = load.matrix(WeightRole::kQ, l, c.q_dim(), h);
      lw.k = load.matrix(WeightRole::kK, l, c.kv_dim(), h);
      lw.v = load.matrix(WeightRole::kV, l, c.kv_dim(), h);
      lw.o = load.matrix(WeightRole::kO, l, h, c.q_dim());
    }
    if (c.qkv_bias) {
      lw.q_bias = load.vector(WeightRole::kQBias, l, c.q_dim());
      lw.k_bias = load.vector(WeightRole::kKBias, l, c.kv_dim());
      lw.v_bias = load.vector(WeightRole::kVBias, l, c.kv_dim());
    }
    if (c.qk_norm) {
      lw.q_norm = load.vector(WeightRole::kQNorm, l, c.head_dim);
      lw.k_norm = load.vector(WeightRole::kKNorm, l, c.head_dim);
    }
    lw.ffn_norm = load.vector(WeightRole::kFfnNorm, l, h);
    if (c.moe.is_moe_layer(l)) {
      lw.moe = load_moe_layer(c, format, lookup, l);
    } else {
      lw.gate = load.matrix(WeightRole::kGate, l, c.intermediate_size, h);
      lw.up = load.matrix(WeightRole::kUp, l, c.intermediate_size, h);
      lw.down = load.matrix(WeightRole::kDown, l, h, c.intermediate_size);
    }
    if (!mla) {
      lw.q_order = load.input_order(WeightRole::kQ, l, h);
      lw.k_order = load.input_order(WeightRole::kK, l, h);
      lw.v_order = load.input_order(WeightRole::kV, l, h);
      lw.o_order = load.input_order(WeightRole::kO, l, c.q_dim());
    }
    if (c.moe.is_moe_layer(l)) continue;
    lw.gate_order = load.input_order(WeightRole::kGate, l, h);
    lw.up_order = load.input_order(WeightRole::kUp, l, h);
    lw.down_order = load.input_order(WeightRole::kDown, l, c.intermediate_size);
  }
  return w;
}

}  // namespace lemma
