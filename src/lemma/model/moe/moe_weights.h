// The tensors of one MoE layer (G27): the router (copied to f32 at load: it is computed in f32),
// the optional score-correction bias, each routed expert's SwiGLU matrices, the shared expert and
// its sigmoid gate. Expert matrices are views: per-expert tensors of an HF checkpoint, or slices of
// a GGUF's stacked ffn_{gate,up,down}_exps [E, rows, cols] (each expert's bytes are contiguous), in
// the file's dtype (f32/bf16/f16 or any GGUF quant the linears take). Immutable after load.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lemma/model/model_config.h"
#include "lemma/model/weight_names.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma {

struct ExpertWeights {
  TensorView gate, up, down;  // [width, hidden] x2, [hidden, width]
};

struct MoeLayerWeights {
  std::vector<float> router;           // [num_experts, hidden] f32
  std::vector<float> score_bias;       // [num_experts] or empty (e_score_correction_bias)
  std::vector<ExpertWeights> experts;  // [num_experts]
  ExpertWeights shared;                // views with null data when the layer has no shared expert
  std::vector<float> shared_gate;      // [hidden] or empty: shared output x sigmoid(shared_gate . x)

  bool has_shared() const { return shared.gate.data != nullptr; }
  TensorView router_view() const;  // router as an f32 [num_experts, hidden] matrix
};

// The tensor names of a MoE layer's parts in `format` (GGUF stacked names: `expert` ignored).
enum class MoeTensor { kRouter, kScoreBias, kExpertGate, kExpertUp, kExpertDown, kSharedGate, kSharedUp, kSharedDown, kSharedExpertGate };
std::string moe_tensor_name(WeightFormat format, MoeTensorNaming naming, MoeTensor tensor, int64_t layer,
                            int64_t expert = 0);

// Throws FormatError naming a missing or misshapen tensor, Unsupported for an expert dtype the
// linears cannot multiply.
using TensorLookupFn = std::function<std::optional<TensorView>(const std::string& name)>;
MoeLayerWeights load_moe_layer(const ModelConfig& config, WeightFormat format, const TensorLookupFn& lookup,
                               int64_t layer);

}  // namespace lemma
