// MoE configuration (G27): config.json readers of the MoE families, including DeepSeek-V2/V3's
// routing fields (read here although their MLA attention is another component's), the layer rule,
// validation with named fields, and the summary `lemma inspect` prints.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/model/config_from_hf.h"
#include "lemma/model/moe/moe_hf_fields.h"

namespace lemma {
namespace {

nlohmann::json base_json(const char* architecture) {
  return {{"architectures", {architecture}}, {"vocab_size", 512}, {"hidden_size", 64}, {"intermediate_size", 128},
          {"num_hidden_layers", 4}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}};
}

TEST(MoeConfig, MixtralReadsExpertsAndRenormalises) {
  auto j = base_json("MixtralForCausalLM");
  j["num_local_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  const ModelConfig c = config_from_hf_json(j);
  EXPECT_EQ(c.arch, "mixtral");
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_EQ(c.moe.expert_intermediate_size, 128);
  EXPECT_TRUE(c.moe.routing.normalize_top_k);
  EXPECT_EQ(c.moe.naming, MoeTensorNaming::kMixtral);
  for (int64_t l = 0; l < 4; ++l) EXPECT_TRUE(c.moe.is_moe_layer(l));
  EXPECT_NE(c.summary().find("moe 8 experts x 128 (top-2, softmax, renormalised)"), std::string::npos) << c.summary();
}

TEST(MoeConfig, QwenMoeSharedExpertSparseStepAndDenseLayers) {
  auto j = base_json("Qwen2MoeForCausalLM");
  j.update({{"num_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 32},
            {"shared_expert_intermediate_size", 96}, {"decoder_sparse_step", 2}, {"mlp_only_layers", {3}}});
  const ModelConfig c = config_from_hf_json(j);
  EXPECT_EQ(c.arch, "qwen2moe");
  EXPECT_FALSE(c.moe.routing.normalize_top_k);  // norm_topk_prob defaults to false
  EXPECT_EQ(c.moe.shared_intermediate_size, 96);
  EXPECT_TRUE(c.moe.shared_expert_gate);
  // MoE iff (l + 1) % 2 == 0 and l not in mlp_only_layers: only layer 1.
  EXPECT_FALSE(c.moe.is_moe_layer(0));
  EXPECT_TRUE(c.moe.is_moe_layer(1));
  EXPECT_FALSE(c.moe.is_moe_layer(2));
  EXPECT_FALSE(c.moe.is_moe_layer(3));
  EXPECT_NE(c.summary().find("shared 96 (sigmoid gate)"), std::string::npos) << c.summary();
}

TEST(MoeConfig, DeepSeekV2AndV3RoutingFields) {
  nlohmann::json j = {{"n_routed_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 48},
                      {"n_shared_experts", 2}, {"first_k_dense_replace", 1}, {"scoring_func", "softmax"},
                      {"topk_method", "group_limited_greedy"}, {"n_group", 2}, {"topk_group", 1},
                      {"norm_topk_prob", false}, {"routed_scaling_factor", 1.5}};
  ModelConfig v2;
  v2.num_layers = 3;
  hf::read_deepseek_moe_fields(j, v2, /*is_v3=*/false);
  v2.moe.validate("deepseek2");
  EXPECT_EQ(v2.moe.routing.group_score, GroupScore::kMax);
  EXPECT_EQ(v2.moe.routing.num_groups, 2);
  EXPECT_EQ(v2.moe.routing.top_groups, 1);
  EXPECT_FLOAT_EQ(v2.moe.routing.routed_scaling_factor, 1.5f);
  EXPECT_EQ(v2.moe.shared_intermediate_size, 96);
  EXPECT_FALSE(v2.moe.shared_expert_gate);
  EXPECT_FALSE(v2.moe.score_correction_bias);
  EXPECT_FALSE(v2.moe.is_moe_layer(0));
  EXPECT_TRUE(v2.moe.is_moe_layer(1));
  // V2 renormalising does not scale (DeepSeek's V2 code); V3 always scales.
  j["norm_topk_prob"] = true;
  ModelConfig v2_norm;
  hf::read_deepseek_moe_fields(j, v2_norm, false);
  EXPECT_FLOAT_EQ(v2_norm.moe.routing.routed_scaling_factor, 1.0f);

  j.update({{"scoring_func", "sigmoid"}, {"topk_method", "noaux_tc"}, {"n_group", 4}, {"topk_group", 2},
            {"routed_scaling_factor", 2.5}});
  ModelConfig v3;
  hf::read_deepseek_moe_fields(j, v3, /*is_v3=*/true);
  v3.moe.validate("deepseek3");
  EXPECT_EQ(v3.moe.routing.scoring, RouterScoring::kSigmoid);
  EXPECT_EQ(v3.moe.routing.group_score, GroupScore::kTop2Sum);
  EXPECT_TRUE(v3.moe.score_correction_bias);
  EXPECT_TRUE(v3.moe.routing.normalize_top_k);
  EXPECT_FLOAT_EQ(v3.moe.routing.routed_scaling_factor, 2.5f);

  j["topk_method"] = "mystery";
  ModelConfig bad;
  EXPECT_THROW(hf::read_deepseek_moe_fields(j, bad, true), Unsupported);
}

TEST(MoeConfig, ValidationNamesTheField) {
  auto j = base_json("Qwen3MoeForCausalLM");
  j.update({{"num_experts", 8}, {"num_experts_per_tok", 9}, {"moe_intermediate_size", 32}});
  try {
    config_from_hf_json(j);
    FAIL() << "top-k 9 of 8 experts accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("experts per token 9"), std::string::npos) << e.what();
  }
  MoeConfig groups;
  groups.num_experts = 8;
  groups.expert_intermediate_size = 16;
  groups.routing = {.top_k = 2, .group_score = GroupScore::kMax, .num_groups = 3, .top_groups = 1};
  EXPECT_THROW(groups.validate("deepseek2"), InvalidArgument);  // 8 experts in 3 groups
  groups.routing.num_groups = 4;
  groups.routing.top_groups = 1;
  groups.routing.top_k = 3;  // one group of 2 cannot give 3 experts
  EXPECT_THROW(groups.validate("deepseek2"), InvalidArgument);
  auto missing = base_json("Qwen3MoeForCausalLM");
  missing.update({{"num_experts", 8}, {"num_experts_per_tok", 2}});
  EXPECT_THROW(config_from_hf_json(missing), FormatError);  // no moe_intermediate_size
}

}  // namespace
}  // namespace lemma
