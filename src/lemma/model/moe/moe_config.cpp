#include "lemma/model/moe/moe_config.h"

#include <algorithm>

#include <fmt/format.h>

#include "lemma/base/error.h"

namespace lemma {

bool MoeConfig::is_moe_layer(int64_t layer) const {
  if (!enabled() || layer < first_dense_layers) return false;
  if (sparse_step > 1 && (layer + 1) % sparse_step != 0) return false;
  return std::find(dense_layers.begin(), dense_layers.end(), layer) == dense_layers.end();
}

void MoeConfig::validate(const std::string& arch) const {
  if (!enabled()) return;
  const RoutingRule& r = routing;
  auto bad = [&](const char* what, auto value) {
    fail<InvalidArgument>("model config ({}): mixture of experts: {} {} is invalid", arch, what, value);
  };
  if (r.top_k < 1 || r.top_k > num_experts) bad("experts per token", r.top_k);
  if (expert_intermediate_size <= 0) bad("expert width", expert_intermediate_size);
  if (shared_intermediate_size < 0) bad("shared expert width", shared_intermediate_size);
  if (shared_expert_gate && shared_intermediate_size == 0) bad("shared expert gate without a shared expert, width", 0);
  if (!(r.routed_scaling_factor > 0.0f)) bad("routed_scaling_factor", r.routed_scaling_factor);
  if (first_dense_layers < 0) bad("first_k_dense_replace", first_dense_layers);
  if (sparse_step < 1) bad("decoder_sparse_step", sparse_step);
  if (r.group_score != GroupScore::kNone) {
    if (r.num_groups < 1 || num_experts % r.num_groups != 0)
      fail<InvalidArgument>("model config ({}): {} experts do not split into n_group {} equal groups", arch,
                            num_experts, r.num_groups);
    if (r.num_groups > 256) bad("n_group (at most 256)", r.num_groups);
    if (r.top_groups < 1 || r.top_groups > r.num_groups) bad("topk_group", r.top_groups);
    if (r.group_score == GroupScore::kTop2Sum && num_experts / r.num_groups < 2)
      bad("experts per group (the top-2-sum group score needs 2)", num_experts / r.num_groups);
    if (r.top_groups * (num_experts / r.num_groups) < r.top_k)
      fail<InvalidArgument>("model config ({}): topk_group {} groups of {} experts hold fewer than top-k {}", arch,
                            r.top_groups, num_experts / r.num_groups, r.top_k);
  }
}

std::string MoeConfig::summary() const {
  if (!enabled()) return "";
  const RoutingRule& r = routing;
  std::string s = fmt::format(", moe {} experts x {} (top-{}, {}{}", num_experts, expert_intermediate_size, r.top_k,
                              r.scoring == RouterScoring::kSoftmax ? "softmax" : "sigmoid",
                              r.normalize_top_k ? ", renormalised" : "");
  if (r.group_score != GroupScore::kNone)
    s += fmt::format(", {} of {} groups by {}", r.top_groups, r.num_groups,
                     r.group_score == GroupScore::kMax ? "max" : "top-2 sum");
  if (score_correction_bias) s += ", score bias";
  if (r.routed_scaling_factor != 1.0f) s += fmt::format(", scale {}", r.routed_scaling_factor);
  s += ")";
  if (shared_intermediate_size > 0)
    s += fmt::format(", shared {}{}", shared_intermediate_size, shared_expert_gate ? " (sigmoid gate)" : "");
  if (first_dense_layers > 0) s += fmt::format(", first {} layers dense", first_dense_layers);
  return s;
}

}  // namespace lemma
