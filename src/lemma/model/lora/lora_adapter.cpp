#include "lemma/model/lora/lora_adapter.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/io/safetensors.h"
#include "lemma/quant/tensor_to_f32.h"

namespace lemma {

namespace {

constexpr std::array<const char*, kNumLoraTargets> kTargetNames = {"q_proj",    "k_proj",  "v_proj", "o_proj",
                                                                    "gate_proj", "up_proj", "down_proj"};

uint64_t next_adapter_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// [out, in] of a target's base weight.
std::pair<int64_t, int64_t> target_shape(const ModelConfig& c, LoraTarget t) {
  switch (t) {
    case LoraTarget::kQ: return {c.q_dim(), c.hidden_size};
    case LoraTarget::kK:
    case LoraTarget::kV: return {c.kv_dim(), c.hidden_size};
    case LoraTarget::kO: return {c.hidden_size, c.q_dim()};
    case LoraTarget::kGate:
    case LoraTarget::kUp: return {c.intermediate_size, c.hidden_size};
    case LoraTarget::kDown: return {c.hidden_size, c.intermediate_size};
  }
  return {0, 0};
}

nlohmann::json read_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) fail<IoError>("{}: cannot open the adapter config (a PEFT adapter directory holds adapter_config.json)", path.string());
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    fail<FormatError>("{}: not valid JSON: {}", path.string(), e.what());
  }
}

bool is_set(const nlohmann::json& config, const char* key) {
  if (!config.contains(key)) return false;
  const auto& v = config[key];
  return !(v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_object() && v.empty()) ||
           (v.is_array() && v.empty()) || (v.is_string() && (v.get<std::string>().empty() || v == "none")));
}

// Refuses the PEFT features whose maths lemma does not implement, naming them.
void check_supported(const nlohmann::json& config, const std::string& where) {
  if (config.value("peft_type", std::string("LORA")) != "LORA")
    fail<Unsupported>("{}: peft_type {} is not supported (only LORA)", where, config["peft_type"].dump());
  for (const char* key : {"use_dora", "modules_to_save", "alpha_pattern", "fan_in_fan_out", "lora_bias"})
    if (is_set(config, key)) fail<Unsupported>("{}: {} = {} is not supported", where, key, config[key].dump());
  if (is_set(config, "bias")) fail<Unsupported>("{}: bias = {} is not supported (only \"none\")", where, config["bias"].dump());
}

// The config's target modules, each one lemma can apply ("all-linear" is all of them).
std::vector<std::string> target_modules(const nlohmann::json& config, const std::string& where) {
  if (!config.contains("target_modules")) fail<FormatError>("{}: no target_modules", where);
  const auto& t = config["target_modules"];
  std::vector<std::string> names;
  if (t.is_string()) {
    if (t.get<std::string>() != "all-linear")
      fail<Unsupported>("{}: target_modules as a regular expression ({}) is not supported; list the modules", where, t.dump());
    for (const char* n : kTargetNames) names.emplace_back(n);
    return names;
  }
  if (!t.is_array()) fail<FormatError>("{}: target_modules must be a list of module names", where);
  for (const auto& n : t) {
    if (!n.is_string()) fail<FormatError>("{}: target_modules holds a non-string {}", where, n.dump());
    const auto name = n.get<std::string>();
    const auto last = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
    if (!lora_target_from_name(last))
      fail<Unsupported>("{}: target module '{}' is not supported (lemma applies LoRA to q_proj, k_proj, v_proj, "
                        "o_proj, gate_proj, up_proj, down_proj)", where, name);
    names.push_back(last);
  }
  return names;
}

struct TensorName {
  int64_t layer = 0;
  LoraTarget target = LoraTarget::kQ;
  bool is_a = false;
};

// "base_model.model.model.layers.3.self_attn.q_proj.lora_A[.default].weight" -> {3, q, A}.
TensorName parse_tensor_name(const std::string& name, const std::string& file) {
  std::vector<std::string> parts;
  std::stringstream ss(name);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  const auto unsupported = [&]() -> TensorName {
    for (const auto& p : parts)
      if (p == "embed_tokens" || p == "lm_head" || p.rfind("lora_embedding", 0) == 0)
        fail<Unsupported>("{}: tensor {}: LoRA on '{}' is not supported (only the layers' linear projections)", file,
                          name, p.rfind("lora_embedding", 0) == 0 ? "embed_tokens" : p);
    fail<FormatError>("{}: tensor {} is not a LoRA matrix of a layer projection "
                      "(expected base_model.model.model.layers.N.<self_attn|mlp>.<module>.lora_<A|B>.weight)", file, name);
  };
  size_t i = 0;
  if (parts.size() > 2 && parts[0] == "base_model" && parts[1] == "model") i = 2;
  if (parts.size() < i + 6 || parts[i] != "model" || parts[i + 1] != "layers") return unsupported();
  TensorName out;
  try {
    size_t used = 0;
    out.layer = std::stoll(parts[i + 2], &used);
    if (used != parts[i + 2].size()) return unsupported();
  } catch (const std::exception&) {
    return unsupported();
  }
  const std::string& block = parts[i + 3];
  const auto target = lora_target_from_name(parts[i + 4]);
  if ((block != "self_attn" && block != "mlp") || !target) return unsupported();
  out.target = *target;
  const std::string& half = parts[i + 5];
  const bool tail_ok = (parts.size() == i + 7 && parts[i + 6] == "weight") ||
                       (parts.size() == i + 8 && parts[i + 7] == "weight");  // ".default.weight"
  if ((half != "lora_A" && half != "lora_B") || !tail_ok) return unsupported();
  out.is_a = half == "lora_A";
  return out;
}

// GGUF llama files store q/k rows permuted for interleaved RoPE (llama.cpp's converter: within each
// head, HF row j * hd/2 + i becomes row 2i + j); B's rows must follow the base weight's.
void permute_rows_for_interleaved_rope(std::vector<float>& b, int64_t heads, int64_t head_dim, int64_t rank) {
  const std::vector<float> hf = b;
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::copy_n(hf.data() + (h * head_dim + j * half + i) * rank, rank, b.data() + (h * head_dim + 2 * i + j) * rank);
}

TensorView f32_view(const std::vector<float>& data, int64_t rows, int64_t cols) {
  TensorView v;
  v.data = data.data();
  v.dtype = DType::kF32;
  v.shape = Shape{rows, cols};
  return v;
}

}  // namespace

const char* lora_target_name(LoraTarget target) { return kTargetNames[static_cast<size_t>(target)]; }

std::optional<LoraTarget> lora_target_from_name(const std::string& module) {
  for (size_t i = 0; i < kNumLoraTargets; ++i)
    if (module == kTargetNames[i]) return static_cast<LoraTarget>(i);
  return std::nullopt;
}

uint64_t LoraAdapter::bytes() const {
  uint64_t n = 0;
  for (const auto& s : storage) n += s.size() * sizeof(float);
  return n;
}

double LoraAdapter::scaling(int64_t matrix_rank) const {
  const auto r = static_cast<double>(matrix_rank);
  return use_rslora ? lora_alpha / std::sqrt(r) : lora_alpha / r;
}

LoraAdapter load_lora_adapter(const std::filesystem::path& dir, const ModelConfig& config,
                              const LoraLoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto config_path = dir / "adapter_config.json";
  const auto weights_path = dir / "adapter_model.safetensors";
  const nlohmann::json json = read_config(config_path);
  const std::string where = config_path.string();
  check_supported(json, where);

  LoraAdapter adapter;
  adapter.dir = dir;
  adapter.id = next_adapter_id();
  adapter.target_modules = target_modules(json, where);
  if (!json.contains("lora_alpha") || !json["lora_alpha"].is_number())
    fail<FormatError>("{}: lora_alpha missing or not a number", where);
  adapter.lora_alpha = json["lora_alpha"].get<double>();
  adapter.use_rslora = json.value("use_rslora", false);
  adapter.layers.resize(static_cast<size_t>(config.num_layers));

  if (!std::filesystem::exists(weights_path))
    fail<IoError>("{}: missing (a PEFT adapter directory holds adapter_model.safetensors)", weights_path.string());
  const SafetensorsFile file = SafetensorsFile::open(weights_path.string());
  const std::string fname = weights_path.string();
  // Pair A and B of each (layer, target) first, then check and widen them.
  std::map<std::pair<int64_t, int>, std::array<const SafetensorsTensor*, 2>> pairs;
  for (const SafetensorsTensor& t : file.tensors()) {
    const TensorName n = parse_tensor_name(t.name, fname);
    if (n.layer < 0 || n.layer >= config.num_layers)
      fail<FormatError>("{}: tensor {}: layer {} outside the model's {} layers", fname, t.name, n.layer, config.num_layers);
    const bool listed = std::find(adapter.target_modules.begin(), adapter.target_modules.end(),
                                  lora_target_name(n.target)) != adapter.target_modules.end();
    if (!listed)
      fail<FormatError>("{}: tensor {} adapts {}, which target_modules does not list", fname, t.name,
                        lora_target_name(n.target));
    auto& slot = pairs[{n.layer, static_cast<int>(n.target)}][n.is_a ? 0 : 1];
    if (slot) fail<FormatError>("{}: tensor {} given twice (as {})", fname, t.name, slot->name);
    slot = &t;
  }
  if (pairs.empty()) fail<FormatError>("{}: holds no LoRA tensors", fname);
  adapter.storage.reserve(2 * pairs.size());  // the views point into its elements: no reallocation
  for (const auto& [key, ab] : pairs) {
    const auto target = static_cast<LoraTarget>(key.second);
    const char* module = lora_target_name(target);
    if (!ab[0] || !ab[1])
      fail<FormatError>("{}: layer {} {}: lora_{} is missing (found only {})", fname, key.first, module,
                        ab[0] ? "B" : "A", (ab[0] ? ab[0] : ab[1])->name);
    const auto [out, in] = target_shape(config, target);
    const Shape& sa = ab[0]->view.shape;
    const Shape& sb = ab[1]->view.shape;
    const int64_t rank = sa.rank == 2 ? sa[0] : -1;
    if (sa.rank != 2 || sa[1] != in || rank < 1)
      fail<FormatError>("{}: tensor {} has shape {}, expected [r, {}] (r >= 1)", fname, ab[0]->name, sa.to_string(), in);
    if (sb.rank != 2 || sb[0] != out || sb[1] != rank)
      fail<FormatError>("{}: tensor {} has shape {}, expected [{}, {}] (its lora_A has rank {})", fname, ab[1]->name,
                        sb.to_string(), out, rank, rank);
    if (options.max_rank > 0 && rank > options.max_rank)
      fail<InvalidArgument>("{}: layer {} {} has rank {}, above the limit of {} (--max-lora-rank)", dir.string(),
                            key.first, module, rank, options.max_rank);
    std::vector<float>& a = adapter.storage.emplace_back(quant::tensor_to_f32(ab[0]->view));
    std::vector<float> b = quant::tensor_to_f32(ab[1]->view);
    if (config.rope.layout == RopeLayout::kInterleaved && (target == LoraTarget::kQ || target == LoraTarget::kK))
      permute_rows_for_interleaved_rope(b, target == LoraTarget::kQ ? config.num_heads : config.num_kv_heads,
                                        config.head_dim, rank);
    std::vector<float>& bt = adapter.storage.emplace_back(static_cast<size_t>(out * rank));
    const auto scale = static_cast<float>(adapter.scaling(rank));
    for (int64_t i = 0; i < out; ++i)
      for (int64_t r = 0; r < rank; ++r) bt[static_cast<size_t>(r * out + i)] = scale * b[static_cast<size_t>(i * rank + r)];
    adapter.layers[static_cast<size_t>(key.first)][static_cast<size_t>(key.second)] =
        LoraMatrices{f32_view(a, rank, in), f32_view(bt, rank, out), rank};
    adapter.rank = std::max(adapter.rank, rank);
  }
  adapter.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return adapter;
}

}  // namespace lemma
