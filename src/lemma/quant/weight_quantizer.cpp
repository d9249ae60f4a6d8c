#include "lemma/quant/weight_quantizer.h"

#include <regex>

#include "lemma/base/error.h"
#include "lemma/quant/quantized_safetensors.h"
#include "lemma/quant/tensor_to_f32.h"

namespace lemma::quant {

namespace {

std::string keep_reason(const NamedTensor& t, const WeightQuantizeOptions& options, const std::vector<std::regex>& keep) {
  const auto& spec = options.spec;
  const auto& keep_text = options.keep_patterns;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (std::regex_search(t.name, keep[i])) return "kept by " + keep_text[i];
  }
  if (t.view.shape.rank < 2) return "1-D";
  if (!std::string_view(t.name).ends_with("weight")) return "not a weight";
  if (!options.include_embeddings && is_embedding_or_output(t.name)) return "embedding/output matrix";
  const auto m = matrix_shape(t.view.shape);
  if (!fits(spec, m.cols)) return fmt::format("row length {} does not fit {}", m.cols, spec.to_string());
  return {};
}

}  // namespace

bool is_embedding_or_output(std::string_view name) {
  for (const std::string_view n : {"token_embd.weight", "output.weight", "embed_tokens.weight", "lm_head.weight"}) {
    if (name == n || (name.ends_with(n) && name[name.size() - n.size() - 1] == '.')) return true;
  }
  return false;
}

QuantizedCheckpoint quantize_weights(const std::vector<NamedTensor>& tensors, const WeightQuantizeOptions& options,
                                     const WeightQuantizeProgress& progress, const GptqCalibration& calibration) {
  validate(options.spec);
  std::vector<std::regex> keep;
  for (const auto& p : options.keep_patterns) {
    try {
      keep.emplace_back(p);
    } catch (const std::regex_error& e) {
      fail<InvalidArgument>("keep pattern '{}': bad regex: {}", p, e.what());
    }
  }
  QuantizedCheckpoint out;
  // Views point into the elements' heap buffers, which stay put when the outer vectors grow.
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    WeightTensorPlan plan{t.name, false, keep_reason(t, options, keep), t.view.bytes(), 0};
    if (plan.reason.empty()) {
      const auto m = matrix_shape(t.view.shape);
      plan.quantized = true;
      plan.reason = options.spec.to_string();
      const InputHessian* hessian =
          calibration.hessian && !options.spec.int8_activations ? calibration.hessian(t.name) : nullptr;
      if (hessian) {
        out.quantized.push_back(gptq_quantize_weight(tensor_to_f32(t.view), m.rows, m.cols, options.spec, *hessian,
                                                     calibration.threads));
        plan.reason += " (GPTQ, calibrated)";
      } else {
        out.quantized.push_back(quantize_weight(tensor_to_f32(t.view), m.rows, m.cols, options.spec));
      }
      for (auto& entry : quantized_tensors(quantized_base_name(t.name), out.quantized.back())) {
        plan.bytes_after += entry.view.bytes();
        out.tensors.push_back(std::move(entry));
      }
    } else if (!dtype_to_safetensors(t.view.dtype).empty()) {
      plan.bytes_after = t.view.bytes();
      out.tensors.push_back({t.name, t.view});
    } else {
      out.widened.push_back(tensor_to_f32(t.view));
      plan.bytes_after = out.widened.back().size() * sizeof(float);
      out.tensors.push_back({t.name, TensorView{out.widened.back().data(), DType::kF32, t.view.shape}});
    }
    if (progress) progress(i, tensors.size(), plan);
    out.plans.push_back(std::move(plan));
  }
  out.metadata = quantized_metadata(options.spec);
  return out;
}

}  // namespace lemma::quant
