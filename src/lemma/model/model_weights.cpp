#include "lemma/model/model_weights.h"

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
  w.final_norm = load.vector(WeightRole::kFinalNorm, 0, h);
  if (c.tie_word_embeddings) {
    w.lm_head = w.token_embedding;
  } else {
    w.lm_head = load.matrix(WeightRole::kLmHead, 0, c.vocab_size, h);
  }
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    lw.attn_norm = load.vector(WeightRole::kAttnNorm, l, h);
    lw.q = load.matrix(WeightRole::kQ, l, c.q_dim(), h);
    lw.k = load.matrix(WeightRole::kK, l, c.kv_dim(), h);
    lw.v = load.matrix(WeightRole::kV, l, c.kv_dim(), h);
    lw.o = load.matrix(WeightRole::kO, l, h, c.q_dim());
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
    lw.gate = load.matrix(WeightRole::kGate, l, c.intermediate_size, h);
    lw.up = load.matrix(WeightRole::kUp, l, c.intermediate_size, h);
    lw.down = load.matrix(WeightRole::kDown, l, h, c.intermediate_size);
  }
  return w;
}

}  // namespace lemma
