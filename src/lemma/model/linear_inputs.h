// The inputs of a layer's matmul groups, as the forward shows them to an observer (calibration:
// GPTQ's Hessians, quant/gptq.h): which input each layer matrix reads and how wide it is.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "lemma/model/model_config.h"
#include "lemma/model/weight_names.h"

namespace lemma {

// q/k/v and gate/up each read one input.
enum class LinearInput { kQkv, kO, kGateUp, kDown };
inline constexpr LinearInput kLinearInputs[] = {LinearInput::kQkv, LinearInput::kO, LinearInput::kGateUp, LinearInput::kDown};

// Sees each layer matmul group's input rows x ([rows, cols], f32) just before the group runs. Not
// called for the LM head.
using LinearInputObserver = std::function<void(int64_t layer, LinearInput input, std::span<const float> x, int64_t rows, int64_t cols)>;

// The input a layer matrix reads; nullopt for roles that are no layer matrix the forward runs.
inline std::optional<LinearInput> linear_input_of(WeightRole role) {
  switch (role) {
    case WeightRole::kQ: case WeightRole::kK: case WeightRole::kV: return LinearInput::kQkv;
    case WeightRole::kO: return LinearInput::kO;
    case WeightRole::kGate: case WeightRole::kUp: return LinearInput::kGateUp;
    case WeightRole::kDown: return LinearInput::kDown;
    default: return std::nullopt;
  }
}
inline constexpr WeightRole kLayerMatrixRoles[] = {WeightRole::kQ,    WeightRole::kK,  WeightRole::kV,   WeightRole::kO,
                                                   WeightRole::kGate, WeightRole::kUp, WeightRole::kDown};

// Values per row of that input.
inline int64_t linear_input_width(const ModelConfig& c, LinearInput input) {
  switch (input) {
    case LinearInput::kO: return c.q_dim();
    case LinearInput::kDown: return c.intermediate_size;
    default: return c.hidden_size;
  }
}

}  // namespace lemma
