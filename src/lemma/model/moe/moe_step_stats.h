// MoeStepStats: the routing statistics of one forward over its MoE layers (G27): how many tokens
// each expert got and how unevenly. The runner hands them up with each step (RunnerOutput ->
// StepReport) and the server's /metrics turns them into two histograms. Plain data.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace lemma::moe {

struct MoeStepStats {
  std::vector<int64_t> tokens_per_expert;  // [num_experts]: (token, layer) pairs routed to each expert
  int64_t num_moe_layers = 0;              // MoE layers run
  int64_t active_experts = 0;              // experts run (>= 1 token), summed over the MoE layers
  double max_load_imbalance = 0.0;         // max over layers of (busiest expert's tokens) / (mean per expert)

  void clear() {
    std::fill(tokens_per_expert.begin(), tokens_per_expert.end(), 0);
    num_moe_layers = 0;
    active_experts = 0;
    max_load_imbalance = 0.0;
  }
  bool empty() const { return num_moe_layers == 0; }
};

}  // namespace lemma::moe
