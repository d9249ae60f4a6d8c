// The `quantization_config` of Hugging Face quantized checkpoints lemma reads and writes:
// quant_method "gptq" (AutoGPTQ, checkpoint_format "gptq"), "awq" (AutoAWQ, version "gemm") and
// "fp8" (fmt "e4m3", optional weight_block_size [128, 128]); and the `lemma quantize --type` names
// that produce them. Plain data; pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace lemma::quant {

enum class HfQuantMethod { kGptq, kAwq, kFp8 };

struct HfQuantConfig {
  HfQuantMethod method = HfQuantMethod::kGptq;
  int bits = 4;              // GPTQ 4 or 8; AWQ 4
  int64_t group_size = 128;  // GPTQ/AWQ; -1 = one group per output channel (GPTQ)
  bool sym = true;           // GPTQ; AWQ is always asymmetric (zero_point true)
  bool desc_act = false;     // GPTQ act-order (g_idx)
  int64_t fp8_block = 0;     // FP8: 0 = per-tensor weight_scale, 128 = weight_block_size [128, 128]

  // "gptq-g128-sym", "gptq8-channel-asym-act", "awq-g128", "fp8", "fp8-block128".
  std::string to_string() const;
  bool operator==(const HfQuantConfig&) const = default;
};

// The GGUF metadata key under which a GGUF container (for GGUF inputs) keeps the
// quantization_config JSON; HF directories keep it in config.json.
inline constexpr std::string_view kHfQuantConfigKey = "lemma.hf_quantization_config";

// `--type` names: "gptq" | "gptq4" | "gptq8", then [-g32|-g64|-g128|-channel] [-sym|-asym] [-act]
// (defaults: 4 bits, g128, sym, no act-order); "awq" [-g32|-g64|-g128] (default g128);
// "fp8" (per-tensor scale) | "fp8-block128". nullopt for anything else.
std::optional<HfQuantConfig> parse_hf_quant_type(std::string_view text);

// Whether a config.json quant_method is one of these (the loader's dispatch).
bool is_hf_quant_method(std::string_view quant_method);
// quantization_config -> HfQuantConfig; throws Unsupported naming the field for values lemma cannot
// run (bits 3, gptq_v2, AWQ other than gemm/zero_point, fp8 formats other than e4m3, ...).
HfQuantConfig hf_quant_config_from_json(const nlohmann::json& quantization_config);
// The quantization_config object the packers write (the published field names and defaults).
nlohmann::json to_json(const HfQuantConfig& config);

}  // namespace lemma::quant
