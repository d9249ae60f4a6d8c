// MoeConfig: the mixture-of-experts part of a ModelConfig (G27) — how many experts, how a token's
// experts are chosen and weighted (RoutingRule), shared experts, and which layers are MoE layers.
// Read from config.json (arch/ files) or GGUF keys (config_from_gguf.cpp). Plain data; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemma {

enum class RouterScoring : uint8_t {
  kSoftmax,  // scores = softmax(router logits) (Mixtral, Qwen-MoE, DeepSeek-V2)
  kSigmoid,  // scores = sigmoid(router logits) (DeepSeek-V3)
};

// How an expert group is scored for group-limited top-k (DeepSeek's n_group / topk_group).
enum class GroupScore : uint8_t {
  kNone,     // no groups: plain top-k over all experts
  kMax,      // DeepSeek-V2 "group_limited_greedy": the group's best choice score
  kTop2Sum,  // DeepSeek-V3 "noaux_tc": the sum of the group's two best choice scores
};

// The rules that turn one token's router logits into its top_k (expert, weight) pairs:
//   scores  = softmax or sigmoid of the logits
//   choice  = scores (+ e_score_correction_bias where the layer has one: V3's noaux_tc)
//   groups  = the top_groups best of num_groups equal groups by GroupScore; other experts excluded
//   experts = the top_k best choices among the eligible ones (ties: the lower expert index)
//   weights = their *scores* (never the bias), renormalised to sum 1 when normalize_top_k,
//             then times routed_scaling_factor.
// DeepSeek-V2 scales only when it does not renormalise: its reader sets routed_scaling_factor = 1
// when norm_topk_prob is true (DeepSeek's modeling code).
struct RoutingRule {
  RouterScoring scoring = RouterScoring::kSoftmax;
  int64_t top_k = 0;
  bool normalize_top_k = false;
  float routed_scaling_factor = 1.0f;
  GroupScore group_score = GroupScore::kNone;
  int64_t num_groups = 1;
  int64_t top_groups = 1;
};

// How the HF checkpoint names a MoE layer's tensors (GGUF names are the same for all).
enum class MoeTensorNaming : uint8_t {
  kMixtral,   // block_sparse_moe.gate, block_sparse_moe.experts.E.{w1,w3,w2}
  kQwen,      // mlp.gate, mlp.experts.E.{gate,up,down}_proj, mlp.shared_expert.*, mlp.shared_expert_gate
  kDeepSeek,  // mlp.gate (+ .e_score_correction_bias), mlp.experts.E.*, mlp.shared_experts.*
};

struct MoeConfig {
  int64_t num_experts = 0;                      // routed experts per MoE layer; 0 = a dense model
  int64_t expert_intermediate_size = 0;         // each routed expert's SwiGLU width
  int64_t shared_intermediate_size = 0;         // the shared expert(s)' total width; 0 = none
  bool shared_expert_gate = false;              // shared output x sigmoid(w . x) (Qwen2-MoE)
  bool score_correction_bias = false;           // e_score_correction_bias per expert (V3 noaux_tc)
  RoutingRule routing;
  int64_t first_dense_layers = 0;               // first_k_dense_replace: layers below are dense
  int64_t sparse_step = 1;                      // Qwen decoder_sparse_step: MoE iff (l + 1) % step == 0
  std::vector<int64_t> dense_layers;            // Qwen mlp_only_layers
  MoeTensorNaming naming = MoeTensorNaming::kMixtral;

  bool enabled() const { return num_experts > 0; }
  bool is_moe_layer(int64_t layer) const;
  // Throws InvalidArgument naming the first inconsistent field (`arch` for the message).
  void validate(const std::string& arch) const;
  // ", moe 8 experts x 32 (top-2, softmax, renormalised), shared 96 (sigmoid gate)" or "".
  std::string summary() const;
};

}  // namespace lemma
