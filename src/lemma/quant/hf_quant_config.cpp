#include "lemma/quant/hf_quant_config.h"

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"

namespace lemma::quant {

namespace {

bool take(std::string_view& text, std::string_view part) {
  if (!text.starts_with(part)) return false;
  text.remove_prefix(part.size());
  return true;
}

bool take_group(std::string_view& text, HfQuantConfig& c, bool allow_channel) {
  if (take(text, "-g32")) c.group_size = 32;
  else if (take(text, "-g64")) c.group_size = 64;
  else if (take(text, "-g128")) c.group_size = 128;
  else if (allow_channel && take(text, "-channel")) c.group_size = -1;
  return true;
}

}  // namespace

std::string HfQuantConfig::to_string() const {
  const std::string group = group_size <= 0 ? "-channel" : "-g" + std::to_string(group_size);
  switch (method) {
    case HfQuantMethod::kGptq:
      return "gptq" + std::to_string(bits) + group + (sym ? "-sym" : "-asym") + (desc_act ? "-act" : "");
    case HfQuantMethod::kAwq: return "awq" + group;
    case HfQuantMethod::kFp8: return fp8_block == 0 ? "fp8" : "fp8-block" + std::to_string(fp8_block);
  }
  return "?";
}

std::optional<HfQuantConfig> parse_hf_quant_type(std::string_view text) {
  HfQuantConfig c;
  if (take(text, "fp8")) {
    c.method = HfQuantMethod::kFp8;
    if (take(text, "-block128")) c.fp8_block = 128;
    return text.empty() ? std::optional(c) : std::nullopt;
  }
  if (take(text, "awq")) {
    c.method = HfQuantMethod::kAwq;
    c.sym = false;
    take_group(text, c, false);
    return text.empty() ? std::optional(c) : std::nullopt;
  }
  if (!take(text, "gptq")) return std::nullopt;
  if (take(text, "8")) c.bits = 8;
  else take(text, "4");
  take_group(text, c, true);
  if (take(text, "-asym")) c.sym = false;
  else take(text, "-sym");
  if (take(text, "-act")) c.desc_act = true;
  return text.empty() ? std::optional(c) : std::nullopt;
}

bool is_hf_quant_method(std::string_view m) { return m == "gptq" || m == "awq" || m == "fp8"; }

HfQuantConfig hf_quant_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) fail<FormatError>("quantization_config is not an object");
  const std::string method = j.value("quant_method", "");
  HfQuantConfig c;
  try {
    if (method == "fp8") {
      c.method = HfQuantMethod::kFp8;
      if (const std::string fmt = j.value("fmt", "e4m3"); fmt != "e4m3")
        fail<Unsupported>("quantization_config: fp8 fmt \"{}\" is not supported (e4m3)", fmt);
      if (auto b = j.find("weight_block_size"); b != j.end() && !b->is_null()) {
        if (!b->is_array() || b->size() != 2 || (*b)[0] != (*b)[1] || !(*b)[0].is_number_integer() || (*b)[0] <= 0)
          fail<Unsupported>("quantization_config: weight_block_size {} is not supported (square tiles)", b->dump());
        c.fp8_block = (*b)[0].get<int64_t>();
      }
      return c;
    }
    c.bits = j.at("bits").get<int>();
    c.group_size = j.at("group_size").get<int64_t>();
    if (method == "awq") {
      c.method = HfQuantMethod::kAwq;
      c.sym = false;
      if (const std::string v = j.value("version", "gemm"); v != "gemm" && v != "GEMM")
        fail<Unsupported>("quantization_config: AWQ version \"{}\" is not supported (gemm)", v);
      if (!j.value("zero_point", true)) fail<Unsupported>("quantization_config: AWQ zero_point false is not supported");
      if (c.bits != 4) fail<Unsupported>("quantization_config: AWQ bits {} is not supported (4)", c.bits);
      if (c.group_size <= 0) fail<Unsupported>("quantization_config: AWQ group_size {} is not supported", c.group_size);
      return c;
    }
    if (method != "gptq") fail<Unsupported>("quantization_config: quant_method \"{}\" is not supported", method);
    c.sym = j.value("sym", true);
    c.desc_act = j.value("desc_act", false);
    if (const std::string f = j.value("checkpoint_format", "gptq"); f != "gptq")
      fail<Unsupported>("quantization_config: GPTQ checkpoint_format \"{}\" is not supported (gptq)", f);
    if (c.bits != 4 && c.bits != 8) fail<Unsupported>("quantization_config: GPTQ bits {} is not supported (4 or 8)", c.bits);
    if (c.group_size == 0 || c.group_size < -1)
      fail<Unsupported>("quantization_config: GPTQ group_size {} is not supported", c.group_size);
  } catch (const nlohmann::json::exception& e) {
    fail<FormatError>("quantization_config ({}): {}", method, e.what());
  }
  return c;
}

nlohmann::json to_json(const HfQuantConfig& c) {
  switch (c.method) {
    case HfQuantMethod::kGptq:
      return {{"bits", c.bits},          {"group_size", c.group_size}, {"damp_percent", 0.01},
              {"desc_act", c.desc_act},  {"static_groups", false},     {"sym", c.sym},
              {"true_sequential", true}, {"quant_method", "gptq"},     {"checkpoint_format", "gptq"}};
    case HfQuantMethod::kAwq:
      return {{"quant_method", "awq"}, {"zero_point", true}, {"group_size", c.group_size}, {"bits", 4}, {"version", "gemm"}};
    case HfQuantMethod::kFp8: {
      nlohmann::json j = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"}};
      if (c.fp8_block > 0) j["weight_block_size"] = {c.fp8_block, c.fp8_block};
      return j;
    }
  }
  return {};
}

}  // namespace lemma::quant
