// The batched MoE layer (G27): out = sum over each token's top-k experts of weight x SwiGLU_e(h)
// (+ the shared expert, optionally sigmoid-gated). The whole step's tokens are routed (router in
// f32), grouped by expert (dispatch), each active expert runs ONE matmul group over its tokens
// (its weights streamed once per step, through the kernel set like every linear), and the outputs
// are combined per token in slot order, so a token's bits never depend on the other tokens.
// Buffers live in a MoeWorkspace (one per ForwardWorkspace; not thread-safe).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/kernels/kernel_scratch.h"
#include "lemma/kernels/matmul.h"
#include "lemma/model/layers/linear.h"
#include "lemma/model/model_config.h"
#include "lemma/model/moe/expert_dispatch.h"
#include "lemma/model/moe/moe_step_stats.h"
#include "lemma/model/moe/moe_weights.h"
#include "lemma/model/thread_team.h"

namespace lemma::moe {

struct MoeWorkspace {
  std::vector<float> router_logits;  // [T, E]
  std::vector<float> route_scratch;  // route_scratch_floats(E)
  std::vector<int32_t> experts;      // [T, top_k]
  std::vector<float> weights;        // [T, top_k]
  ExpertDispatch dispatch;
  std::vector<float> grouped_x;      // [T * top_k, hidden] in dispatch order
  std::vector<float> grouped_gate;   // [T * top_k, expert width] (then silu(gate) * up)
  std::vector<float> grouped_up;     // [T * top_k, expert width]
  std::vector<float> grouped_out;    // [T * top_k, hidden]
  std::vector<float> shared_gate;    // [T, shared width]
  std::vector<float> shared_up;      // [T, shared width]
  std::vector<float> shared_out;     // [T, hidden]
  MoeStepStats stats;                // of the current forward (cleared by Model::forward)
};

// What the layer runs its matmuls with: the forward's team, options and scratch.
struct MoeRun {
  ThreadTeam* team = nullptr;
  kernels::MatmulOptions options = {};
  kernels::Isa isa = kernels::Isa::kScalar;
  layers::LinearScratch* scratch = nullptr;
  std::span<kernels::KernelScratch> kernel_scratch = {};
};

// h: [T, hidden] (the layer's normed input); out: [T, hidden], overwritten (may alias h: h is read
// completely before out is written).
void moe_forward(const ModelConfig& config, const MoeLayerWeights& weights, std::span<const float> h, int64_t T,
                 std::span<float> out, MoeWorkspace& ws, const MoeRun& run);

}  // namespace lemma::moe
