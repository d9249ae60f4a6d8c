// Test helper: a small Llama-family model with random weights held in memory under HF tensor names,
// and a plain dense float64 reference forward written from the HF definitions (rotate_half RoPE,
// default / linear / dynamic-NTK frequencies, causal + sliding-window mask) to check Model against.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lemma/model/model.h"

namespace lemma::testing {

struct RandomModel {
  ModelConfig config;
  std::shared_ptr<std::map<std::string, std::vector<float>>> tensors;  // HF names -> values
  std::map<std::string, Shape> shapes;

  Model build(const RuntimeOptions& runtime = {}) const;
  const std::vector<float>& at(const std::string& name) const { return tensors->at(name); }
};

// hidden 32, ffn 48, 2 layers, 4 heads x 8 (2 kv heads), vocab 40, rope theta 10000, std 0.3.
ModelConfig small_config();
RandomModel make_random_model(const ModelConfig& config, uint32_t seed);
// small_config() with a Mixtral-style MoE MLP in every layer: 4 experts of width 8, top-2 renormalised
// (the dense MLP tensors stay in the map, unused; reference_forward does not know MoE).
RandomModel make_random_moe_model(uint32_t seed);

// [tokens.size(), vocab] logits of one sequence from positions 0.., in double.
std::vector<double> reference_forward(const RandomModel& model, const std::vector<int32_t>& tokens);

}  // namespace lemma::testing
