#include "lemma/quant/hf_quant_packer.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <map>
#include <regex>

#include "lemma/base/error.h"
#include "lemma/quant/awq_packing.h"
#include "lemma/quant/fp8_weight.h"
#include "lemma/quant/gptq_packing.h"
#include "lemma/quant/quantized_safetensors.h"
#include "lemma/quant/tensor_to_f32.h"

namespace lemma::quant {

namespace {

bool fits(const HfQuantConfig& c, int64_t N, int64_t K) {
  switch (c.method) {
    case HfQuantMethod::kGptq: return gptq_fits(c.bits, N, K);
    case HfQuantMethod::kAwq: return awq_fits(c.group_size, N, K);
    case HfQuantMethod::kFp8: return true;
  }
  return false;
}

std::string keep_reason(const NamedTensor& t, const HfQuantConfig& c, const std::vector<std::regex>& keep,
                        const std::vector<std::string>& keep_text) {
  for (size_t i = 0; i < keep.size(); ++i)
    if (std::regex_search(t.name, keep[i])) return "kept by " + keep_text[i];
  if (t.view.shape.rank != 2) return t.view.shape.rank < 2 ? "1-D" : "not a matrix";
  if (!std::string_view(t.name).ends_with("weight")) return "not a weight";
  if (is_embedding_or_output(t.name)) return "embedding/output matrix";
  const auto m = matrix_shape(t.view.shape);
  if (!fits(c, m.rows, m.cols)) return fmt::format("shape [{}, {}] does not pack as {}", m.rows, m.cols, c.to_string());
  return {};
}

class Out {
 public:
  explicit Out(HfQuantizedCheckpoint& c) : c_(c) {}
  template <typename T>
  uint64_t add(const std::string& name, DType dtype, Shape shape, const std::vector<T>& data) {
    auto& bytes = c_.buffers.emplace_back(data.size() * sizeof(T));
    std::memcpy(bytes.data(), data.data(), bytes.size());
    c_.tensors.push_back({name, TensorView{bytes.data(), dtype, shape}});
    return bytes.size();
  }

 private:
  HfQuantizedCheckpoint& c_;
};

// max |W[:, k]| per input channel.
std::vector<float> column_absmax(const std::vector<float>& w, int64_t N, int64_t K) {
  std::vector<float> out(static_cast<size_t>(K), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      out[static_cast<size_t>(k)] = std::max(out[static_cast<size_t>(k)], std::fabs(w[static_cast<size_t>(n * K + k)]));
  return out;
}

// The input a matrix reads, as a key shared by the matrices that read the same one: q/k/v and
// gate/up of a layer (HF or GGUF names); any other matrix is its own key.
std::string input_key(const std::string& name) {
  const auto with = [&name](std::initializer_list<std::string_view> members, std::string_view group) -> std::string {
    for (const auto member : members) {
      const std::string suffix = std::string(member) + ".weight";
      if (name.ends_with(suffix)) return name.substr(0, name.size() - suffix.size()) + std::string(group);
    }
    return {};
  };
  for (auto key : {with({"q_proj", "k_proj", "v_proj"}, "qkv_proj"), with({"gate_proj", "up_proj"}, "gate_up_proj"),
                   with({"attn_q", "attn_k", "attn_v"}, "attn_qkv"), with({"ffn_gate", "ffn_up"}, "ffn_gate_up")})
    if (!key.empty()) return key;
  return name;
}

// GPTQ act-order orders the inputs by the Hessian diagonal of the layer input, so matrices that read
// the same input share one order. The stand-in score (no calibration data): max |W[:, k]| over
// every such matrix, per input key.
using InputScores = std::map<std::string, std::vector<float>>;

uint64_t pack_one(Out& out, const std::string& base, const std::vector<float>& w, int64_t N, int64_t K,
                  const HfQuantConfig& c, const std::vector<float>& act_order_score, const InputHessian* hessian,
                  int threads) {
  if (c.method == HfQuantMethod::kFp8) {
    const auto f = quantize_fp8(w, N, K, c.fp8_block);
    uint64_t bytes = out.add(base + ".weight", DType::kF8E4M3, Shape{N, K}, f.codes);
    if (c.fp8_block == 0) return bytes + out.add(base + ".weight_scale", DType::kF32, Shape{1}, f.scales);
    return bytes + out.add(base + ".weight_scale_inv", DType::kF32, Shape{f.block_rows(), f.block_cols()}, f.scales);
  }
  if (c.method == HfQuantMethod::kAwq) {
    const auto t = pack_awq(quantize_grouped(w, N, K, 4, c.group_size, GroupRounding::kAwq));
    return out.add(base + ".qweight", DType::kI32, Shape{K, N / 8}, t.qweight) +
           out.add(base + ".qzeros", DType::kI32, Shape{t.num_groups, N / 8}, t.qzeros) +
           out.add(base + ".scales", DType::kF16, Shape{t.num_groups, N}, t.scales);
  }
  const auto rounding = c.sym ? GroupRounding::kGptqSym : GroupRounding::kGptqAsym;
  const auto t = pack_gptq(
      hessian ? gptq_quantize(w, N, K, *hessian, {c.bits, c.group_size, c.sym, c.desc_act, 0.01, threads})
              : quantize_grouped(w, N, K, c.bits, c.group_size, rounding,
                                 c.desc_act ? act_order_g_idx(act_order_score, c.group_size) : std::vector<int32_t>{}));
  const int pack = 32 / c.bits;
  return out.add(base + ".qweight", DType::kI32, Shape{K / pack, N}, t.qweight) +
         out.add(base + ".qzeros", DType::kI32, Shape{t.num_groups, N / pack}, t.qzeros) +
         out.add(base + ".scales", DType::kF16, Shape{t.num_groups, N}, t.scales) +
         out.add(base + ".g_idx", DType::kI32, Shape{K}, t.g_idx);
}

}  // namespace

HfQuantizedCheckpoint pack_hf_checkpoint(const std::vector<NamedTensor>& tensors, const HfQuantConfig& config,
                                         const std::vector<std::string>& keep_patterns,
                                         const WeightQuantizeProgress& progress,
                                         const GptqCalibration& calibration) {
  std::vector<std::regex> keep;
  for (const auto& p : keep_patterns) {
    try {
      keep.emplace_back(p);
    } catch (const std::regex_error& e) {
      fail<InvalidArgument>("keep pattern '{}': bad regex: {}", p, e.what());
    }
  }
  InputScores scores;  // act-order: a first pass over the matrices to pack
  for (size_t i = 0; config.desc_act && i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (!keep_reason(t, config, keep, keep_patterns).empty()) continue;
    const auto m = matrix_shape(t.view.shape);
    const auto own = column_absmax(tensor_to_f32(t.view), m.rows, m.cols);
    auto& score = scores[input_key(t.name)];
    if (score.size() != own.size()) {
      if (!score.empty()) fail<InvalidArgument>("{}: {} inputs, the matrices beside it {}", t.name, own.size(), score.size());
      score.assign(own.size(), 0.0f);
    }
    for (size_t k = 0; k < own.size(); ++k) score[k] = std::max(score[k], own[k]);
  }
  HfQuantizedCheckpoint result;
  result.buffers.reserve(tensors.size() * 4);
  Out out(result);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    WeightTensorPlan plan{t.name, false, keep_reason(t, config, keep, keep_patterns), t.view.bytes(), 0};
    if (plan.reason.empty()) {
      const auto m = matrix_shape(t.view.shape);
      plan.quantized = true;
      plan.reason = config.to_string();
      const auto score = scores.find(input_key(t.name));
      const InputHessian* hessian =
          config.method == HfQuantMethod::kGptq && calibration.hessian ? calibration.hessian(t.name) : nullptr;
      plan.bytes_after = pack_one(out, quantized_base_name(t.name), tensor_to_f32(t.view), m.rows, m.cols, config,
                                  score != scores.end() ? score->second : std::vector<float>{}, hessian,
                                  calibration.threads);
      if (hessian) plan.reason += " (GPTQ, calibrated)";
    } else if (!dtype_to_safetensors(t.view.dtype).empty()) {
      plan.bytes_after = t.view.bytes();
      result.tensors.push_back({t.name, t.view});
    } else {
      plan.bytes_after = out.add(t.name, DType::kF32, t.view.shape, tensor_to_f32(t.view));
    }
    if (progress) progress(i, tensors.size(), plan);
    result.plans.push_back(std::move(plan));
  }
  return result;
}

}  // namespace lemma::quant
