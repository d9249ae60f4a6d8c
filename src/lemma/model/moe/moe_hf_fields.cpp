#include "lemma/model/moe/moe_hf_fields.h"

#include "lemma/base/error.h"
#include "lemma/model/arch/hf_fields.h"

namespace lemma::hf {

void read_mixtral_moe_fields(const nlohmann::json& j, ModelConfig& c) {
  MoeConfig& m = c.moe;
  m.num_experts = required_int(j, "num_local_experts");
  m.routing.top_k = get_int(j, "num_experts_per_tok").value_or(2);
  m.routing.normalize_top_k = true;
  m.expert_intermediate_size = c.intermediate_size;
  m.naming = MoeTensorNaming::kMixtral;
}

void read_qwen_moe_fields(const nlohmann::json& j, ModelConfig& c) {
  MoeConfig& m = c.moe;
  m.num_experts = required_int(j, "num_experts");
  m.routing.top_k = required_int(j, "num_experts_per_tok");
  m.expert_intermediate_size = required_int(j, "moe_intermediate_size");
  m.routing.normalize_top_k = get_bool(j, "norm_topk_prob").value_or(false);
  m.sparse_step = get_int(j, "decoder_sparse_step").value_or(1);
  if (auto it = j.find("mlp_only_layers"); it != j.end() && it->is_array())
    for (const auto& l : *it) m.dense_layers.push_back(l.get<int64_t>());
  m.shared_intermediate_size = get_int(j, "shared_expert_intermediate_size").value_or(0);
  m.shared_expert_gate = m.shared_intermediate_size > 0;  // Qwen2-MoE's shared expert always has one
  m.naming = MoeTensorNaming::kQwen;
}

void read_deepseek_moe_fields(const nlohmann::json& j, ModelConfig& c, bool is_v3) {
  MoeConfig& m = c.moe;
  RoutingRule& r = m.routing;
  m.num_experts = required_int(j, "n_routed_experts");
  r.top_k = required_int(j, "num_experts_per_tok");
  m.expert_intermediate_size = required_int(j, "moe_intermediate_size");
  m.shared_intermediate_size = m.expert_intermediate_size * get_int(j, "n_shared_experts").value_or(0);
  m.first_dense_layers = get_int(j, "first_k_dense_replace").value_or(0);
  if (const auto freq = get_int(j, "moe_layer_freq"); freq && *freq != 1)
    fail<Unsupported>("config.json: moe_layer_freq {} is not supported (1)", *freq);
  const std::string scoring = get_string(j, "scoring_func").value_or("softmax");
  if (scoring != "softmax" && scoring != "sigmoid")
    fail<Unsupported>("config.json: scoring_func \"{}\" is not supported (softmax, sigmoid)", scoring);
  r.scoring = scoring == "softmax" ? RouterScoring::kSoftmax : RouterScoring::kSigmoid;
  const std::string method = get_string(j, "topk_method").value_or("greedy");
  if (method == "group_limited_greedy") {
    r.group_score = GroupScore::kMax;
  } else if (method == "noaux_tc") {
    r.group_score = GroupScore::kTop2Sum;
    m.score_correction_bias = true;
  } else if (method != "greedy") {
    fail<Unsupported>("config.json: topk_method \"{}\" is not supported (greedy, group_limited_greedy, noaux_tc)", method);
  }
  if (r.group_score != GroupScore::kNone) {
    r.num_groups = required_int(j, "n_group");
    r.top_groups = required_int(j, "topk_group");
  }
  r.normalize_top_k = get_bool(j, "norm_topk_prob").value_or(false) && r.top_k > 1;
  const auto scale = static_cast<float>(get_float(j, "routed_scaling_factor").value_or(1.0));
  // V3 scales always; V2 only the weights it did not renormalise (DeepSeek's modeling code).
  r.routed_scaling_factor = is_v3 || !r.normalize_top_k ? scale : 1.0f;
  m.naming = MoeTensorNaming::kDeepSeek;
}

}  // namespace lemma::hf
