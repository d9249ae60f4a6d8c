#include "lemma/model/layers/mla_weights.h"

#include <fmt/format.h>

#include "lemma/base/error.h"
#include "lemma/model/layers/linear.h"

namespace lemma {

TensorView MlaLayerWeights::w_uk_t_view(int64_t head, const MlaConfig& m) const {
  const int64_t n = m.kv_lora_rank * m.qk_nope_head_dim;
  return TensorView{w_uk_t.data() + head * n, DType::kF32, Shape{m.kv_lora_rank, m.qk_nope_head_dim}};
}

TensorView MlaLayerWeights::w_uv_view(int64_t head, const MlaConfig& m) const {
  const int64_t n = m.v_head_dim * m.kv_lora_rank;
  return TensorView{w_uv.data() + head * n, DType::kF32, Shape{m.v_head_dim, m.kv_lora_rank}};
}

std::string mla_tensor_name(WeightFormat format, const char* gguf_suffix, const char* hf_suffix, int64_t layer) {
  return format == WeightFormat::kGguf ? fmt::format("blk.{}.{}", layer, gguf_suffix)
                                       : fmt::format("model.layers.{}.{}", layer, hf_suffix);
}

namespace {

class MlaLoader {
 public:
  MlaLoader(WeightFormat format, const MlaTensorLookup& lookup, int64_t layer)
      : format_(format), lookup_(lookup), layer_(layer) {}

  TensorView require(const char* gguf, const char* hf) const {
    const std::string name = mla_tensor_name(format_, gguf, hf, layer_);
    const auto t = lookup_(name);
    if (!t) {
      if (format_ == WeightFormat::kGguf && lookup_(mla_tensor_name(format_, "attn_k_b.weight", "", layer_)))
        fail<Unsupported>("gguf model: layer {} stores MLA as attn_k_b/attn_v_b (newer llama.cpp); lemma reads attn_kv_b",
                          layer_);
      fail<FormatError>("{} model: missing tensor {}", to_string(format_), name);
    }
    return *t;
  }

  TensorView matrix(const char* gguf, const char* hf, int64_t rows, int64_t cols) const {
    const TensorView t = require(gguf, hf);
    const std::string name = mla_tensor_name(format_, gguf, hf, layer_);
    if (t.shape.rank != 2 || t.shape[0] != rows || t.shape[1] != cols)
      fail<FormatError>("tensor {}: expected shape [{}, {}], got {}", name, rows, cols, t.shape.to_string());
    if (!layers::is_supported_weight_dtype(t.dtype))
      fail<Unsupported>("tensor {}: weight dtype {} is not supported", name, dtype_name(t.dtype));
    return t;
  }

  std::vector<float> vector(const char* gguf, const char* hf, int64_t length) const {
    const TensorView t = require(gguf, hf);
    if (t.shape.rank != 1 || t.shape[0] != length)
      fail<FormatError>("tensor {}: expected shape [{}], got {}", mla_tensor_name(format_, gguf, hf, layer_), length,
                        t.shape.to_string());
    std::vector<float> out(static_cast<size_t>(length));
    layers::read_all_f32(t, out);
    return out;
  }

 private:
  WeightFormat format_;
  const MlaTensorLookup& lookup_;
  int64_t layer_;
};

}  // namespace

MlaLayerWeights load_mla_layer(const ModelConfig& c, WeightFormat format, const MlaTensorLookup& lookup, int64_t layer) {
  const MlaConfig& m = c.mla;
  const MlaLoader load(format, lookup, layer);
  const int64_t H = c.hidden_size, nh = c.num_heads, qk = m.qk_head_dim(), R = m.kv_lora_rank;
  const int64_t nope = m.qk_nope_head_dim, vd = m.v_head_dim;
  MlaLayerWeights w;
  if (m.q_lora_rank > 0) {
    w.q_a = load.matrix("attn_q_a.weight", "self_attn.q_a_proj.weight", m.q_lora_rank, H);
    w.q_a_norm = load.vector("attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight", m.q_lora_rank);
    w.q_b = load.matrix("attn_q_b.weight", "self_attn.q_b_proj.weight", nh * qk, m.q_lora_rank);
  } else {
    w.q = load.matrix("attn_q.weight", "self_attn.q_proj.weight", nh * qk, H);
  }
  w.kv_a = load.matrix("attn_kv_a_mqa.weight", "self_attn.kv_a_proj_with_mqa.weight", m.latent_dim(), H);
  w.kv_a_norm = load.vector("attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight", R);
  w.kv_b = load.matrix("attn_kv_b.weight", "self_attn.kv_b_proj.weight", nh * (nope + vd), R);
  w.o = load.matrix("attn_output.weight", "self_attn.o_proj.weight", H, nh * vd);
  // Per head h, kv_b's rows h (nope + v) .. + nope are W_UK[h] [nope, R], the next v rows W_UV[h].
  w.w_uk_t.resize(static_cast<size_t>(nh * R * nope));
  w.w_uv.resize(static_cast<size_t>(nh * vd * R));
  std::vector<float> row(static_cast<size_t>(R));
  for (int64_t h = 0; h < nh; ++h) {
    for (int64_t i = 0; i < nope + vd; ++i) {
      layers::read_row(w.kv_b, h * (nope + vd) + i, row);
      if (i < nope) {
        float* dst = w.w_uk_t.data() + h * R * nope + i;  // column i of W_UK^T[h]
        for (int64_t r = 0; r < R; ++r) dst[r * nope] = row[static_cast<size_t>(r)];
      } else {
        std::copy(row.begin(), row.end(), w.w_uv.begin() + (h * vd + (i - nope)) * R);
      }
    }
  }
  return w;
}

}  // namespace lemma
