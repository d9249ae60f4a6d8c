#include "lemma/quant/hf_quantized_weights.h"

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/quant/awq_packing.h"
#include "lemma/quant/fp8_weight.h"
#include "lemma/quant/gptq_packing.h"

namespace lemma::quant {

namespace {

bool has_gguf_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

}  // namespace

std::optional<HfQuantConfig> hf_quant_config_of(const GgufFile& file) {
  const auto text = file.get_string(std::string(kHfQuantConfigKey));
  if (!text) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    fail<FormatError>("{}: {} is not JSON: {}", file.path(), kHfQuantConfigKey, e.what());
  }
  return hf_quant_config_from_json(j);
}

std::optional<HfQuantConfig> hf_quant_config_of_file(const std::filesystem::path& config_json) {
  std::ifstream in(config_json);
  if (!in) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail<FormatError>("{}: invalid JSON: {}", config_json.string(), e.what());
  }
  const auto q = j.find("quantization_config");
  if (q == j.end() || !q->is_object() || !is_hf_quant_method(q->value("quant_method", ""))) return std::nullopt;
  return hf_quant_config_from_json(*q);
}

HfQuantizedWeights HfQuantizedWeights::open(const std::string& path, const std::optional<HfQuantConfig>& config,
                                            LoadMode mode) {
  HfQuantizedWeights r;
  r.state_ = std::make_shared<State>();
  State& s = *r.state_;
  std::vector<std::string> names;
  if (has_gguf_magic(path)) {
    s.gguf = GgufFile::open(path, mode);
    const auto c = hf_quant_config_of(*s.gguf);
    if (!c) fail<FormatError>("{}: no {} metadata: not a GPTQ/AWQ/FP8 container", path, kHfQuantConfigKey);
    r.config_ = *c;
    for (const auto& t : s.gguf->tensors()) names.push_back(t.name);
  } else {
    if (!config) fail<InvalidArgument>("{}: a safetensors checkpoint needs its quantization_config", path);
    r.config_ = *config;
    s.safetensors = SafetensorsCheckpoint::open(path, mode);
    for (const auto* t : s.safetensors->tensors()) names.push_back(t->name);
  }
  const auto raw = [&s](const std::string& name) -> const TensorView* {
    if (s.gguf) {
      const auto* t = s.gguf->tensor(name);
      return t ? &t->view : nullptr;
    }
    const auto* t = s.safetensors->tensor(name);
    return t ? &t->view : nullptr;
  };
  const auto need = [&](const std::string& name) -> const TensorView& {
    const auto* t = raw(name);
    if (!t) fail<FormatError>("{}: {} checkpoint is missing tensor {}", path, r.config_.to_string(), name);
    return *t;
  };
  const HfQuantConfig& c = r.config_;
  const std::string_view suffix = c.method == HfQuantMethod::kFp8 ? (c.fp8_block == 0 ? ".weight_scale" : ".weight_scale_inv")
                                                                  : ".qweight";
  for (const auto& name : names) {
    if (!std::string_view(name).ends_with(suffix)) continue;
    const std::string base = name.substr(0, name.size() - suffix.size());
    const std::string weight_name = base + ".weight";
    TensorView view;
    std::vector<uint8_t> bytes;
    if (c.method == HfQuantMethod::kFp8) {
      const auto bf16 = fp8_to_bf16(read_fp8(base, need(weight_name), need(name), c.fp8_block));
      const TensorView& w = need(weight_name);
      bytes.resize(bf16.size() * 2);
      std::memcpy(bytes.data(), bf16.data(), bytes.size());
      view = TensorView{nullptr, DType::kBF16, w.shape};
    } else {
      GroupedIntWeight w;
      if (c.method == HfQuantMethod::kGptq) {
        const TensorView* g_idx = raw(base + ".g_idx");
        w = unpack_gptq(base, c.bits, c.group_size, need(name), need(base + ".qzeros"), need(base + ".scales"),
                        g_idx ? std::optional<TensorView>(*g_idx) : std::nullopt);
      } else {
        w = unpack_awq(base, c.group_size, need(name), need(base + ".qzeros"), need(base + ".scales"));
      }
      auto runtime = to_runtime(w);
      if (runtime.dtype == DType::kF32) r.widened_.push_back(weight_name);
      if (!runtime.input_order.empty()) {  // act-order: the matmul reads x in this order
        const std::string order_name = base + std::string(kInputOrderSuffix);
        auto& order = s.bytes[order_name];
        order.resize(runtime.input_order.size() * sizeof(int32_t));
        std::memcpy(order.data(), runtime.input_order.data(), order.size());
        s.views[order_name] = TensorView{order.data(), DType::kI32, Shape{w.in_features}};
        r.reordered_.push_back(weight_name);
      }
      bytes = std::move(runtime.bytes);
      view = TensorView{nullptr, runtime.dtype, Shape{w.out_features, w.in_features}};
    }
    auto& stored = s.bytes[weight_name] = std::move(bytes);
    view.data = stored.data();
    s.views[weight_name] = view;
    r.converted_.push_back(weight_name);
  }
  // Parts without their main tensor: a GPTQ/AWQ qzeros/scales with no qweight, an fp8 weight with no scale.
  for (const auto& name : names) {
    const std::string_view n = name;
    std::string base;
    if (c.method != HfQuantMethod::kFp8 && (n.ends_with(".qzeros") || n.ends_with(".scales")))
      base = name.substr(0, name.rfind('.'));
    if (c.method == HfQuantMethod::kFp8 && n.ends_with(".weight") && raw(name)->dtype == DType::kF8E4M3)
      base = name.substr(0, name.size() - 7);
    if (!base.empty() && !s.views.contains(base + ".weight"))
      fail<FormatError>("{}: {} checkpoint is missing tensor {}{}", path, c.to_string(), base, suffix);
  }
  return r;
}

std::optional<TensorView> HfQuantizedWeights::find(const std::string& name) const {
  if (const auto it = state_->views.find(name); it != state_->views.end()) return it->second;
  if (state_->gguf) {
    if (const auto* t = state_->gguf->tensor(name)) return t->view;
  } else if (const auto* t = state_->safetensors->tensor(name)) {
    return t->view;
  }
  return std::nullopt;
}

}  // namespace lemma::quant
