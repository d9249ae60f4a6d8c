#include "lemma/model/config_from_hf.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/model/arch/arch_registry.h"
#include "lemma/model/arch/hf_fields.h"

namespace lemma {

namespace {

const ArchSpec& arch_of(const nlohmann::json& j) {
  if (auto it = j.find("architectures"); it != j.end() && it->is_array()) {
    for (const auto& name : *it)
      if (name.is_string())
        if (const ArchSpec* a = find_arch_by_hf(name.get<std::string>())) return *a;
  }
  if (auto type = hf::get_string(j, "model_type"))
    if (const ArchSpec* a = find_arch_by_hf(*type)) return *a;
  const std::string what = j.contains("architectures") ? j["architectures"].dump()
                                                       : hf::get_string(j, "model_type").value_or("(none)");
  fail<Unsupported>("config.json: unsupported architecture {}; supported: {}", what, supported_arch_names());
}

int64_t required_int(const nlohmann::json& j, std::string_view key) {
  auto v = hf::get_int(j, key);
  if (!v) fail<FormatError>("config.json: missing \"{}\"", key);
  return *v;
}

}  // namespace

RopeScaling rope_scaling_from_hf(const nlohmann::json& rs, int64_t max_position_embeddings) {
  RopeScaling s;
  if (rs.is_null()) return s;
  if (!rs.is_object()) fail<FormatError>("config.json: rope_scaling must be an object, got {}", rs.dump());
  const std::string type = hf::get_string(rs, "rope_type").value_or(hf::get_string(rs, "type").value_or("default"));
  const auto parsed = parse_rope_scaling_type(type);
  if (!parsed)
    fail<Unsupported>("config.json: rope_scaling type \"{}\" is not supported (default, linear, dynamic, yarn, llama3)",
                      type);
  s.type = *parsed;
  if (s.type == RopeScalingType::kNone) return s;
  const auto factor = hf::get_float(rs, "factor");
  if (!factor) fail<FormatError>("config.json: rope_scaling \"{}\" needs \"factor\"", type);
  s.factor = *factor;
  s.original_max_position_embeddings = hf::get_int(rs, "original_max_position_embeddings").value_or(0);
  if (s.type == RopeScalingType::kYarn) {
    if (s.original_max_position_embeddings > 0) {
      // transformers: the ratio of the two context lengths replaces "factor".
      s.factor = static_cast<double>(max_position_embeddings) / static_cast<double>(s.original_max_position_embeddings);
    } else {
      s.original_max_position_embeddings = max_position_embeddings;
    }
    s.attention_factor = hf::get_float(rs, "attention_factor");
    s.beta_fast = hf::get_float(rs, "beta_fast").value_or(32.0);
    s.beta_slow = hf::get_float(rs, "beta_slow").value_or(1.0);
    s.mscale = hf::get_float(rs, "mscale").value_or(0.0);
    s.mscale_all_dim = hf::get_float(rs, "mscale_all_dim").value_or(0.0);
    s.yarn_truncate = hf::get_bool(rs, "truncate").value_or(true);
  }
  if (s.type == RopeScalingType::kLlama3) {
    s.low_freq_factor = hf::get_float(rs, "low_freq_factor").value_or(1.0);
    s.high_freq_factor = hf::get_float(rs, "high_freq_factor").value_or(4.0);
    if (s.original_max_position_embeddings <= 0)
      fail<FormatError>("config.json: llama3 rope_scaling needs original_max_position_embeddings");
  }
  return s;
}

ModelConfig config_from_hf_json(const nlohmann::json& j) {
  if (!j.is_object()) fail<FormatError>("config.json: expected a JSON object");
  const ArchSpec& arch = arch_of(j);
  ModelConfig c;
  c.arch = std::string(arch.name);
  c.vocab_size = required_int(j, "vocab_size");
  c.hidden_size = required_int(j, "hidden_size");
  c.intermediate_size = required_int(j, "intermediate_size");
  c.num_layers = required_int(j, "num_hidden_layers");
  c.num_heads = required_int(j, "num_attention_heads");
  c.num_kv_heads = hf::get_int(j, "num_key_value_heads").value_or(c.num_heads);
  c.head_dim = hf::get_int(j, "head_dim").value_or(c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  c.max_position_embeddings = hf::get_int(j, "max_position_embeddings").value_or(2048);
  c.rms_norm_eps = static_cast<float>(hf::get_float(j, "rms_norm_eps").value_or(1e-6));
  c.tie_word_embeddings = hf::get_bool(j, "tie_word_embeddings").value_or(false);
  if (auto bos = hf::get_int(j, "bos_token_id")) c.bos_token_id = static_cast<int32_t>(*bos);
  if (auto eos = j.find("eos_token_id"); eos != j.end()) {
    if (eos->is_number_integer()) c.eos_token_id = eos->get<int32_t>();
    if (eos->is_array() && !eos->empty() && (*eos)[0].is_number_integer()) c.eos_token_id = (*eos)[0].get<int32_t>();
  }

  if (auto act = hf::get_string(j, "hidden_act"); act && *act != "silu" && *act != "swish")
    fail<Unsupported>("config.json: hidden_act \"{}\" is not supported (silu)", *act);
  // lemma's own int8/int4/W8A8 files describe themselves in the safetensors metadata (Model::open
  // serves them through quant::RunnableWeights); GPTQ/AWQ/FP8 ones through quant::HfQuantizedWeights.
  const auto is_served = [](const nlohmann::json& q) {
    const std::string m = q.is_object() ? q.value("quant_method", "") : "";
    return m == "lemma" || m == "gptq" || m == "awq" || m == "fp8";
  };
  if (auto q = j.find("quantization_config"); q != j.end() && !q->is_null() && !is_served(*q))
    fail<Unsupported>("config.json: quantized HF checkpoints (quantization_config {}) are not supported",
                      q->is_object() && q->contains("quant_method") ? (*q)["quant_method"].dump() : q->dump());
  if (auto partial = hf::get_float(j, "partial_rotary_factor"); partial && *partial != 1.0)
    fail<Unsupported>("config.json: partial_rotary_factor {} is not supported", *partial);

  // transformers 5 folds rope_theta and the scaling into "rope_parameters".
  const nlohmann::json* rope_json = nullptr;
  if (auto it = j.find("rope_parameters"); it != j.end() && it->is_object()) rope_json = &*it;
  if (auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) rope_json = &*it;
  c.rope.theta = hf::get_float(j, "rope_theta")
                     .value_or(rope_json ? hf::get_float(*rope_json, "rope_theta").value_or(10000.0) : 10000.0);
  c.rope.rotary_dim = c.head_dim;
  c.rope.layout = RopeLayout::kHalfSplit;
  c.rope.max_position_embeddings = c.max_position_embeddings;
  if (rope_json) c.rope.scaling = rope_scaling_from_hf(*rope_json, c.max_position_embeddings);

  c.qkv_bias = arch.qkv_bias;
  c.qk_norm = arch.qk_norm;
  if (arch.read_hf_fields) arch.read_hf_fields(j, c);
  c.validate();
  return c;
}

ModelConfig config_from_hf_file(const std::filesystem::path& path) {
  const auto file = std::filesystem::is_directory(path) ? path / "config.json" : path;
  std::ifstream in(file);
  if (!in) fail<IoError>("cannot open {}", file.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail<FormatError>("{}: invalid JSON: {}", file.string(), e.what());
  }
  return config_from_hf_json(j);
}

}  // namespace lemma
