// Reading the MoE fields of config.json into ModelConfig::moe, for the arch/ files of the MoE
// families: Mixtral, Qwen2-MoE / Qwen3-MoE, and DeepSeek-V2/V3 (whose attention, MLA, is another
// component's; the routing fields are read here so both share one reader). Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "lemma/model/model_config.h"

namespace lemma::hf {

// num_local_experts, num_experts_per_tok; experts as wide as intermediate_size, top-k renormalised.
void read_mixtral_moe_fields(const nlohmann::json& j, ModelConfig& config);
// num_experts, num_experts_per_tok, moe_intermediate_size, norm_topk_prob (default false),
// decoder_sparse_step, mlp_only_layers, shared_expert_intermediate_size (Qwen2-MoE: with its sigmoid gate).
void read_qwen_moe_fields(const nlohmann::json& j, ModelConfig& config);
// n_routed_experts, num_experts_per_tok, moe_intermediate_size, n_shared_experts, scoring_func,
// topk_method (greedy, group_limited_greedy, noaux_tc), n_group, topk_group, norm_topk_prob,
// routed_scaling_factor (V2: only when not renormalising, as DeepSeek's V2 code), first_k_dense_replace.
void read_deepseek_moe_fields(const nlohmann::json& j, ModelConfig& config, bool is_v3);

}  // namespace lemma::hf
