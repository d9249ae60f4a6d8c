#include "lemma/model/moe/moe_weights.h"

#include <fmt/format.h>

#include "lemma/base/error.h"
#include "lemma/model/layers/linear.h"

namespace lemma {

TensorView MoeLayerWeights::router_view() const {
  const auto hidden = static_cast<int64_t>(router.size() / experts.size());
  return TensorView{router.data(), DType::kF32, Shape{static_cast<int64_t>(experts.size()), hidden}};
}

std::string moe_tensor_name(WeightFormat format, MoeTensorNaming naming, MoeTensor tensor, int64_t layer,
                            int64_t expert) {
  if (format == WeightFormat::kGguf) {
    const char* suffix = "";
    switch (tensor) {
      case MoeTensor::kRouter: suffix = "ffn_gate_inp.weight"; break;
      case MoeTensor::kScoreBias: suffix = "exp_probs_b.bias"; break;
      case MoeTensor::kExpertGate: suffix = "ffn_gate_exps.weight"; break;
      case MoeTensor::kExpertUp: suffix = "ffn_up_exps.weight"; break;
      case MoeTensor::kExpertDown: suffix = "ffn_down_exps.weight"; break;
      case MoeTensor::kSharedGate: suffix = "ffn_gate_shexp.weight"; break;
      case MoeTensor::kSharedUp: suffix = "ffn_up_shexp.weight"; break;
      case MoeTensor::kSharedDown: suffix = "ffn_down_shexp.weight"; break;
      case MoeTensor::kSharedExpertGate: suffix = "ffn_gate_inp_shexp.weight"; break;
    }
    return fmt::format("blk.{}.{}", layer, suffix);
  }
  const bool mixtral = naming == MoeTensorNaming::kMixtral;
  const std::string block = fmt::format("model.layers.{}.{}", layer, mixtral ? "block_sparse_moe" : "mlp");
  const std::string expert_prefix = fmt::format("{}.experts.{}.", block, expert);
  const std::string shared = block + (naming == MoeTensorNaming::kDeepSeek ? ".shared_experts." : ".shared_expert.");
  switch (tensor) {
    case MoeTensor::kRouter: return block + ".gate.weight";
    case MoeTensor::kScoreBias: return block + ".gate.e_score_correction_bias";
    case MoeTensor::kExpertGate: return expert_prefix + (mixtral ? "w1.weight" : "gate_proj.weight");
    case MoeTensor::kExpertUp: return expert_prefix + (mixtral ? "w3.weight" : "up_proj.weight");
    case MoeTensor::kExpertDown: return expert_prefix + (mixtral ? "w2.weight" : "down_proj.weight");
    case MoeTensor::kSharedGate: return shared + "gate_proj.weight";
    case MoeTensor::kSharedUp: return shared + "up_proj.weight";
    case MoeTensor::kSharedDown: return shared + "down_proj.weight";
    case MoeTensor::kSharedExpertGate: return block + ".shared_expert_gate.weight";
  }
  return "?";
}

namespace {

class MoeLoader {
 public:
  MoeLoader(const ModelConfig& c, WeightFormat format, const TensorLookupFn& lookup, int64_t layer)
      : c_(c), format_(format), lookup_(lookup), layer_(layer) {}

  std::string name(MoeTensor t, int64_t expert = 0) const {
    return moe_tensor_name(format_, c_.moe.naming, t, layer_, expert);
  }

  TensorView require(const std::string& name) const {
    const auto t = lookup_(name);
    if (!t) fail<FormatError>("{} model: missing tensor {}", to_string(format_), name);
    return *t;
  }

  // A matrix [rows, cols] in a dtype the linears take.
  TensorView matrix(const std::string& name, int64_t rows, int64_t cols) const {
    return checked_matrix(name, require(name), rows, cols);
  }

  // Expert e's [rows, cols] slice of a stacked [E, rows, cols] tensor.
  TensorView stacked_slice(const std::string& name, int64_t expert, int64_t rows, int64_t cols) const {
    const TensorView t = require(name);
    const int64_t E = c_.moe.num_experts;
    if (t.shape.rank != 3 || t.shape[0] != E || t.shape[1] != rows || t.shape[2] != cols)
      fail<FormatError>("tensor {}: expected shape [{}, {}, {}], got {}", name, E, rows, cols, t.shape.to_string());
    const uint64_t per_expert = t.bytes() / static_cast<uint64_t>(E);
    const TensorView slice{t.bytes_ptr() + per_expert * static_cast<uint64_t>(expert), t.dtype, Shape{rows, cols}};
    return checked_matrix(name, slice, rows, cols);
  }

  std::vector<float> f32(const std::string& name, int64_t rows, int64_t cols) const {
    const TensorView t = require(name);
    const bool vector_ok = rows == 1 && t.shape.rank == 1 && t.shape[0] == cols;
    if (!vector_ok && (t.shape.rank != 2 || t.shape[0] != rows || t.shape[1] != cols))
      fail<FormatError>("tensor {}: expected shape [{}, {}], got {}", name, rows, cols, t.shape.to_string());
    std::vector<float> out(static_cast<size_t>(rows * cols));
    layers::read_all_f32(t, out);
    return out;
  }

  bool has(const std::string& name) const { return lookup_(name).has_value(); }

 private:
  static TensorView checked_matrix(const std::string& name, const TensorView& t, int64_t rows, int64_t cols) {
    if (t.shape.rank != 2 || t.shape[0] != rows || t.shape[1] != cols)
      fail<FormatError>("tensor {}: expected shape [{}, {}], got {}", name, rows, cols, t.shape.to_string());
    if (!layers::is_supported_weight_dtype(t.dtype))
      fail<Unsupported>("tensor {}: weight dtype {} is not supported", name, dtype_name(t.dtype));
    return t;
  }

  const ModelConfig& c_;
  WeightFormat format_;
  const TensorLookupFn& lookup_;
  int64_t layer_;
};

}  // namespace

MoeLayerWeights load_moe_layer(const ModelConfig& c, WeightFormat format, const TensorLookupFn& lookup, int64_t layer) {
  const MoeConfig& moe = c.moe;
  const MoeLoader load(c, format, lookup, layer);
  const int64_t H = c.hidden_size, E = moe.num_experts, W = moe.expert_intermediate_size;
  MoeLayerWeights w;
  w.router = load.f32(load.name(MoeTensor::kRouter), E, H);
  if (moe.score_correction_bias) w.score_bias = load.f32(load.name(MoeTensor::kScoreBias), 1, E);
  w.experts.resize(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    ExpertWeights& x = w.experts[static_cast<size_t>(e)];
    if (format == WeightFormat::kGguf) {
      x.gate = load.stacked_slice(load.name(MoeTensor::kExpertGate), e, W, H);
      x.up = load.stacked_slice(load.name(MoeTensor::kExpertUp), e, W, H);
      x.down = load.stacked_slice(load.name(MoeTensor::kExpertDown), e, H, W);
    } else {
      x.gate = load.matrix(load.name(MoeTensor::kExpertGate, e), W, H);
      x.up = load.matrix(load.name(MoeTensor::kExpertUp, e), W, H);
      x.down = load.matrix(load.name(MoeTensor::kExpertDown, e), H, W);
    }
  }
  if (moe.shared_intermediate_size > 0) {
    const int64_t S = moe.shared_intermediate_size;
    w.shared.gate = load.matrix(load.name(MoeTensor::kSharedGate), S, H);
    w.shared.up = load.matrix(load.name(MoeTensor::kSharedUp), S, H);
    w.shared.down = load.matrix(load.name(MoeTensor::kSharedDown), H, S);
    if (moe.shared_expert_gate) w.shared_gate = load.f32(load.name(MoeTensor::kSharedExpertGate), 1, H);
  }
  return w;
}

}  // namespace lemma
