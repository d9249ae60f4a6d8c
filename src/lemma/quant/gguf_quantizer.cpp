#include "lemma/quant/gguf_quantizer.h"

#include <algorithm>
#include <cstring>
#include <regex>
#include <span>

#include "lemma/base/error.h"
#include "lemma/quant/ggml_quantize.h"
#include "lemma/quant/tensor_to_f32.h"

namespace lemma::quant {

namespace {

constexpr std::string_view kFileTypeKey = "general.file_type";
constexpr std::string_view kQuantVersionKey = "general.quantization_version";
constexpr uint32_t kGgmlQuantizationVersion = 2;

DType parse_override_type(const std::string& name) {
  if (name == "q8_0") return DType::kQ8_0;
  if (name == "q4_0") return DType::kQ4_0;
  if (name == "f16") return DType::kF16;
  if (name == "bf16") return DType::kBF16;
  if (name == "iq4_nl") return DType::kIQ4_NL;
  if (name == "iq4_xs") return DType::kIQ4_XS;
  if (name == "f32") return DType::kF32;
  fail<InvalidArgument>("tensor type '{}' is not one of q8_0, q4_0, iq4_nl, iq4_xs, f16, bf16, f32", name);
}

// The recipe's choice for a tensor that can be quantized at all.
TensorPlan recipe_choice(const GgufTensor& t, const GgufQuantizeOptions& options, bool is_output_matrix) {
  const bool four_bit = options.type == DType::kQ4_0 || options.type == DType::kIQ4_NL || options.type == DType::kIQ4_XS;
  if (four_bit && is_output_matrix) {
    return {t.name, t.view.dtype, DType::kQ8_0, "output matrix (llama.cpp recipe; no Q6_K quantizer)"};
  }
  return {t.name, t.view.dtype, options.type, "recipe"};
}

// Tensors of a block type need whole blocks per row; otherwise they keep their stored type. IQ4_XS
// rows that are whole 32-value blocks but not 256-value ones become IQ4_NL (as in llama-quantize).
TensorPlan fit_to_rows(TensorPlan plan, const GgufTensor& t) {
  const int64_t cols = t.view.shape[t.view.shape.rank - 1];
  if (plan.to == DType::kIQ4_XS && cols % 256 != 0 && cols % 32 == 0) {
    plan.reason = fmt::format("row length {} is not a multiple of 256 (iq4_xs wanted)", cols);
    plan.to = DType::kIQ4_NL;
    return plan;
  }
  const auto block = static_cast<int64_t>(dtype_info(plan.to).block_elements);
  if (cols % block != 0) {
    plan.reason = fmt::format("row length {} is not a multiple of {} ({} wanted)", cols, block, dtype_name(plan.to));
    plan.to = t.view.dtype;
  }
  return plan;
}

// "blk.N." -> N; -1 for tensors outside the layers.
int64_t layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  name.remove_prefix(4);
  int64_t layer = 0;
  size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') {
    layer = layer * 10 + (name[digits] - '0');
    ++digits;
  }
  return digits > 0 && digits < name.size() && name[digits] == '.' ? layer : -1;
}

}  // namespace

std::vector<size_t> llama_quantize_order(const GgufFile& file) {
  std::vector<size_t> order(file.tensors().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto& t = file.tensors();
  std::stable_sort(order.begin(), order.end(), [&t](size_t a, size_t b) {
    const int64_t la = layer_of(t[a].name), lb = layer_of(t[b].name);
    return la != lb ? la < lb : t[a].name < t[b].name;
  });
  return order;
}

TensorTypeOverride parse_tensor_type_override(const std::string& text) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) fail<InvalidArgument>("tensor type override '{}' is not REGEX=TYPE", text);
  TensorTypeOverride o{text.substr(0, eq), parse_override_type(text.substr(eq + 1))};
  try {
    std::regex check(o.pattern);
  } catch (const std::regex_error& e) {
    fail<InvalidArgument>("tensor type override '{}': bad regex: {}", text, e.what());
  }
  return o;
}

uint32_t llama_file_type(DType type) {
  if (type == DType::kQ8_0) return 7;
  if (type == DType::kQ4_0) return 2;
  if (type == DType::kF16) return 1;
  if (type == DType::kBF16) return 32;
  if (type == DType::kIQ4_NL) return 25;
  if (type == DType::kIQ4_XS) return 30;
  fail<InvalidArgument>("no llama.cpp file type for {}", dtype_name(type));
}

std::vector<TensorPlan> plan_gguf_quantization(const GgufFile& file, const GgufQuantizeOptions& options) {
  if (!can_quantize_gguf(options.type)) fail<InvalidArgument>("cannot quantize to GGUF type {}", dtype_name(options.type));
  std::vector<std::regex> patterns;
  for (const auto& o : options.overrides) patterns.emplace_back(o.pattern);
  const std::string output_name = file.tensor("output.weight") ? "output.weight" : "token_embd.weight";

  std::vector<TensorPlan> plans;
  for (const auto& t : file.tensors()) {
    const DType from = t.view.dtype;
    size_t match = 0;
    while (match < patterns.size() && !std::regex_search(t.name, patterns[match])) ++match;
    if (match < patterns.size()) {
      const DType to = options.overrides[match].type;
      TensorPlan plan{t.name, from, to, "override " + options.overrides[match].pattern};
      plans.push_back(to == DType::kF32 ? plan : fit_to_rows(plan, t));
    } else if (t.view.shape.rank < 2) {
      plans.push_back({t.name, from, from, "1-D"});
    } else if (!std::string_view(t.name).ends_with("weight")) {
      plans.push_back({t.name, from, from, "not a weight"});
    } else if (std::string_view(t.name).ends_with("ffn_gate_inp.weight")) {
      // The MoE router decides which experts run: llama-quantize keeps it as stored (G27).
      plans.push_back({t.name, from, from, "MoE router (kept, as llama-quantize)"});
    } else {
      plans.push_back(fit_to_rows(recipe_choice(t, options, t.name == output_name), t));
    }
  }
  return plans;
}

GgufWriter quantize_gguf(const GgufFile& file, const GgufQuantizeOptions& options, const QuantizeProgress& progress) {
  const auto plans = plan_gguf_quantization(file, options);
  GgufWriter writer;
  const uint32_t file_type = llama_file_type(options.type);
  // As gguf_set_val_u32 in llama-quantize: an existing key is removed and the new value appended.
  for (const auto& [key, value] : file.metadata()) {
    if (key != kQuantVersionKey && key != kFileTypeKey) writer.set(value);
  }
  writer.set_scalar<uint32_t>(std::string(kQuantVersionKey), kGgmlQuantizationVersion);
  writer.set_scalar<uint32_t>(std::string(kFileTypeKey), file_type);

  const auto& tensors = file.tensors();
  const auto order = llama_quantize_order(file);
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& t = tensors[order[i]];
    const auto& plan = plans[order[i]];
    if (plan.to == t.view.dtype) {
      writer.add_tensor(t.name, t.view);
      if (progress) progress(i, tensors.size(), plan, t.view.bytes(), t.view.bytes());
      continue;
    }
    const auto values = tensor_to_f32(t.view);
    std::vector<uint8_t> bytes;
    if (plan.to == DType::kF32) {
      bytes.resize(values.size() * sizeof(float));
      std::memcpy(bytes.data(), values.data(), bytes.size());
    } else {
      const auto m = matrix_shape(t.view.shape);
      bytes.resize(*dtype_bytes(plan.to, static_cast<uint64_t>(values.size())));
      const uint64_t row_bytes = bytes.size() / static_cast<uint64_t>(m.rows);
      for (int64_t r = 0; r < m.rows; ++r) {
        quantize_row_gguf(plan.to, values.data() + r * m.cols, bytes.data() + r * row_bytes, m.cols);
      }
    }
    writer.add_tensor(t.name, plan.to, t.view.shape, bytes);
    if (progress) progress(i, tensors.size(), plan, t.view.bytes(), bytes.size());
  }
  return writer;
}

}  // namespace lemma::quant
