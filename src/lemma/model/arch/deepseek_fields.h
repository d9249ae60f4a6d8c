// The config.json fields DeepSeek-V2 and V3 share (arch/deepseek2.cpp, arch/deepseek3.cpp): multi-head
// latent attention (G28) with its YaRN softmax-scale correction, NORM (adjacent-pair) RoPE, and the
// DeepSeek mixture of experts (G27). Thread-safe (pure).
#pragma once

#include <nlohmann/json.hpp>

#include "lemma/model/model_config.h"

namespace lemma::hf {

// Sets config.mla, head_dim (= nope + rope), num_kv_heads (= num_heads), the RoPE dims and layout,
// and config.moe. Throws FormatError for missing MLA fields, Unsupported for attention biases.
void read_deepseek_fields(const nlohmann::json& j, ModelConfig& config, bool is_v3);

}  // namespace lemma::hf
