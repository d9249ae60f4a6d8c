// The memory side of G5's capacity model: how many bytes the weights and each token's keys/values
// take, how many bytes a decode step reads per generated token, and how many sequences of a given
// context fit in a memory budget. Plain arithmetic over ModelConfig/ModelWeights; thread-safe.
#pragma once

#include <cstdint>

#include "lemma/model/kv_cache.h"
#include "lemma/model/model_config.h"
#include "lemma/model/model_weights.h"

namespace lemma::bench {

// K and V of one token in every layer in a cache of `dtype` (model/kv_cache.h): 2 x layers x kv_heads
// x (head_dim x element bytes + one f32 scale for int8/fp8).
// An MLA model (G28) caches one latent row per layer: layers x ((kv_lora_rank + rope) x element bytes + scale).
uint64_t kv_bytes_per_token(const ModelConfig& config, KvDtype dtype = KvDtype::kF32);
// What the same model would cache per token as plain multi-head attention (per-head K and V of
// max(nope + rope, v) each); = kv_bytes_per_token for a model without MLA.
uint64_t mha_equivalent_kv_bytes_per_token(const ModelConfig& config, KvDtype dtype = KvDtype::kF32);

// What KvCache::for_model(config, num_blocks, block_size, dtype) allocates: num_blocks x block_size x
// kv_bytes_per_token, plus (int8/fp8) the padding that starts the scales on a 64-byte boundary.
uint64_t kv_cache_bytes(const ModelConfig& config, int64_t num_blocks, int64_t block_size,
                        KvDtype dtype = KvDtype::kF32);

struct WeightBytes {
  uint64_t resident = 0;        // every tensor the model holds (matrices in file dtype, 1-D tensors as f32)
  uint64_t read_per_token = 0;  // what one decode step streams: all layer matrices + LM head + one embedding row
                                // (MoE: the routed experts of one token, top_k per MoE layer, + shared experts)
  // MoE models (G27): what a step streams besides the routed experts, every routed expert's
  // matrices, and how many (expert, layer) pairs hold them.
  uint64_t read_outside_experts = 0;
  uint64_t routed_expert_bytes = 0;
  int64_t routed_experts = 0;
  // What a decode step streams when it runs `active_experts` (expert, layer) pairs.
  uint64_t read_per_step(double active_experts) const;
};
WeightBytes weight_bytes(const ModelConfig& config, const ModelWeights& weights);

struct CapacityPlan {
  uint64_t memory_bytes = 0;            // the budget
  uint64_t weight_bytes = 0;            // resident weights, taken off the budget first
  uint64_t kv_bytes_per_token = 0;
  int64_t context = 0;                  // tokens per sequence
  int64_t block_size = 0;               // KV block size (tokens); a sequence holds whole blocks
  uint64_t kv_bytes_per_sequence = 0;   // ceil(context / block_size) blocks
  int64_t max_sequences = 0;            // floor((memory - weights) / kv_bytes_per_sequence), >= 0
  int64_t max_blocks = 0;               // the most KV blocks whose cache (kv_cache_bytes) fits in memory - weights
};

// Throws InvalidArgument for a non-positive context or block size.
CapacityPlan plan_capacity(const ModelConfig& config, uint64_t resident_weight_bytes, uint64_t memory_bytes,
                           int64_t context, int64_t block_size = 16, KvDtype dtype = KvDtype::kF32);

}  // namespace lemma::bench
