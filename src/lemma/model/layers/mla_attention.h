// Multi-head latent attention (G28, DeepSeek-V2/V3) over a latent KV cache: per token and layer the
// cache holds only [c_kv | k_pe] (kv_lora_rank + qk_rope_head_dim values, KvCache latent mode).
// Two ways to attend, equal in exact arithmetic:
//   absorbed     (decode): W_UK is folded into the query, q_abs[h] = [W_UK[h]^T q_nope[h] | q_pe[h]],
//                which attends the latent rows directly as one shared KV head (MQA over
//                kv_lora_rank + rope dims; the values are the rows' c_kv part), then W_UV[h] maps
//                each head's latent output to its value. Reads latent_dim values per cached token.
//   materialised (prefill): the context's K/V are rebuilt per head from the latent
//                (k_nope, v = kv_b_proj(c_kv), k = [k_nope | k_pe]) and attended as in MHA; the
//                rebuild costs heads x (nope + v) x kv_lora_rank per context token, paid once per
//                step, so it pays when a sequence brings many new tokens.
// Both read the latent back from the cache (also the step's own tokens, after they are written),
// so the two see the same inputs in any cache dtype. Not thread-safe on one MlaWorkspace.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_scratch.h"
#include "lemma/kernels/matmul.h"
#include "lemma/model/kv_cache.h"
#include "lemma/model/layers/linear.h"
#include "lemma/model/layers/mla_weights.h"
#include "lemma/model/layers/paged_attention.h"
#include "lemma/model/model_config.h"
#include "lemma/model/thread_team.h"

namespace lemma::layers {

// A sequence's new tokens from which MlaMode::kAuto rebuilds K/V: the rebuild costs about as much as
// (nope + v) / 2 absorbed query rows per head, so below ~that many rows absorbing is cheaper.
inline constexpr int64_t kMlaMaterialiseMinTokens = 64;

// Buffers of the MLA layers, grown on demand and reused by every layer and step.
struct MlaWorkspace {
  std::vector<float> q;          // [T, heads, nope + rope]
  std::vector<float> q_a;        // [T, q_lora_rank]
  std::vector<float> latent;     // [T, kv_lora_rank + rope]: the new tokens' [c_kv | k_pe]
  std::vector<float> q_abs;      // [T, heads, kv_lora_rank + rope]
  std::vector<float> latent_out; // [T, heads, kv_lora_rank + rope]
  std::vector<float> heads_out;  // [T, heads, v]
  std::vector<float> mha_out;    // [T, heads, nope + rope] (materialised; values zero-padded)
  std::vector<float> head_x, head_y;  // one head's rows, gathered
  std::vector<float> ctx_latent;      // [context, kv_lora_rank + rope] read back from the cache
  std::vector<float> ctx_c;           // [context, kv_lora_rank]
  std::vector<float> ctx_kv;          // [context, heads, nope + v]
  std::vector<float> ctx_k, ctx_v;    // [context, heads, nope + rope]
  std::vector<float> scores;          // paged_attention scratch
  std::vector<int64_t> rows;          // rows of the absorbed sequences
  std::vector<AttentionSequence> absorbed, materialised;
};

// What the layer borrows from the forward.
struct MlaStep {
  std::span<const AttentionSequence> slices;  // the step's sequences (token rows, block tables)
  std::span<const float> rope_cos, rope_sin;  // [T, rope / 2] angles of each row
  MlaMode mode = MlaMode::kAuto;  // RuntimeOptions::mla_attention
  ThreadTeam* team = nullptr;
  kernels::Isa isa = kernels::Isa::kScalar;  // attention, norms
  kernels::MatmulOptions options = {};      // the projections
  LinearScratch* activations = nullptr;
  std::span<kernels::KernelScratch> kernel_scratch = {};
};

// x: [T, hidden] (the layer's normed input); out: [T, hidden] (the o_proj output, overwritten; may
// alias x, which only the first projections read). Writes the T new tokens' latent rows into `cache` first (slot context_length -
// num_tokens + i of each slice, a tree node's at its index), then attends.
void mla_attention(const ModelConfig& config, const MlaLayerWeights& weights, std::span<const float> x, int64_t T,
                   const KvLayerView& cache, const MlaStep& step, MlaWorkspace& ws, std::span<float> out);

}  // namespace lemma::layers
