// ForwardWorkspace: the activation buffers of a forward, allocated once and reused across steps
// (grown only when a batch needs more tokens or context than any before), the ThreadTeam the
// forward splits its matmuls and attention heads over, and the captured decode plans over those
// buffers (decode_plans.h). One per concurrent forward; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lemma/kernels/kernel_scratch.h"
#include "lemma/model/decode_plans.h"
#include "lemma/model/layers/linear.h"
#include "lemma/model/layers/mla_attention.h"
#include "lemma/model/layers/paged_attention.h"
#include "lemma/model/linear_inputs.h"
#include "lemma/model/lora/lora_delta.h"
#include "lemma/model/model_config.h"
#include "lemma/model/moe/moe_layer.h"
#include "lemma/model/rope_scaling.h"
#include "lemma/model/thread_team.h"

namespace lemma {

struct ForwardWorkspace {
  // `num_threads` threads (the caller included) work on each forward; 0 means one per CPU.
  explicit ForwardWorkspace(int num_threads = 1, bool pin_threads = true)
      : team(std::make_unique<ThreadTeam>(num_threads, pin_threads)), kernel_scratch(static_cast<size_t>(team->size())) {}

  // Makes every buffer large enough for `num_tokens` new tokens, `num_logit_rows` logit rows and
  // a context of `max_context` tokens. Allocates only when growing.
  void reserve(const ModelConfig& config, int64_t num_tokens, int64_t num_logit_rows, int64_t max_context);
  // Grows every team thread's kernel scratch to `bytes` (KernelSet::scratch_bytes() of the forward's
  // ISA), so that no kernel allocates later, whichever thread first runs it. Allocates only when growing.
  void reserve_kernel_scratch(size_t bytes);

  std::vector<float> residual;    // [tokens, hidden]
  std::vector<float> normed;      // [tokens, hidden]; after forward(): every row's final hidden state (the final norm's output)
  std::vector<float> q;           // [tokens, num_heads, head_dim]
  std::vector<float> k;           // [tokens, num_kv_heads, head_dim]
  std::vector<float> v;           // [tokens, num_kv_heads, head_dim]
  std::vector<float> attn_out;    // [tokens, num_heads, head_dim]
  std::vector<float> gate;        // [tokens, intermediate]
  std::vector<float> up;          // [tokens, intermediate]
  std::vector<float> head_input;  // [logit rows, hidden]: after a forward, the final-normed rows that got logits
  std::vector<float> scores;      // attention scratch (flash partials); the forward grows it to paged_attention_scratch_floats()
  std::vector<int64_t> positions;  // [tokens]
  std::vector<float> rope_cos;     // [tokens, rotary_dim / 2]: each token's RoPE angles, for every layer
  std::vector<float> rope_sin;     // [tokens, rotary_dim / 2]
  // Attention sinks (G10): the rows of streaming sequences rotated for their sink query position
  // (kv/streaming_window.h); grown only by batches that have such sequences.
  std::vector<int64_t> sink_positions;  // [tokens]
  std::vector<float> sink_rope_cos;     // [tokens, rotary_dim / 2]
  std::vector<float> sink_rope_sin;     // [tokens, rotary_dim / 2]
  std::vector<float> sink_q;            // [tokens, num_heads, head_dim]
  // Per-sequence lists the forward rebuilds each step (cleared, never shrunk).
  std::vector<layers::AttentionSequence> slices;
  std::vector<RopeFrequencies> dynamic_rope;  // dynamic-NTK tables of this step
  std::vector<layers::TreeKeys> trees;  // one per token-tree sequence (slices point at them)
  std::vector<int32_t> tree_slots;      // their slot tables (layers/tree_keys.h)
  std::vector<LoraSegment> lora_segments;  // this step's token rows per adapter (G29)
  std::vector<const LoraAdapter*> lora_adapters;  // per sequence (scratch for building the segments)
  std::vector<int64_t> lora_tokens;                // per sequence
  LoraScratch lora_scratch;
  layers::LinearScratch activations;  // the matmuls' prepared inputs (int8/bf16 x, gathered x)
  std::unique_ptr<ThreadTeam> team;
  // One per team thread, indexed by the worker index ThreadTeam passes to a range (0 = the caller):
  // what the kernels stage per call (the AMX-INT8 panel, the AMX flash tiles), lent to the matmuls
  // and attention that thread runs. Empty for kernels that stage nothing.
  std::vector<kernels::KernelScratch> kernel_scratch;
  layers::MlaWorkspace mla;  // the latent-attention layers' buffers (G28)
  moe::MoeWorkspace moe;  // the MoE layers' buffers and this forward's routing statistics (G27)
  // Tensor parallelism (G7): this rank's share of the logits and every rank's, gathered
  // (model/tensor_parallel.h); empty on a single rank.
  std::vector<float> tp_logits;
  std::vector<float> tp_gathered;
  DecodePlanCache decode_plans;  // matmul plans per batch row count, replayed by decode steps (G15)
  // Empty in serving (one branch per matmul group); set by calibration tools (linear_inputs.h).
  LinearInputObserver observe_linear_input;
};

}  // namespace lemma
