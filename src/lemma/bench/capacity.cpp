#include "lemma/bench/capacity.h"

#include <algorithm>
#include <string>

#include "lemma/base/error.h"
#include "lemma/tensor/tensor_view.h"

namespace lemma::bench {

namespace {
uint64_t floats_bytes(const std::vector<float>& v) { return static_cast<uint64_t>(v.size()) * sizeof(float); }
}  // namespace

uint64_t kv_bytes_per_token(const ModelConfig& config, KvDtype dtype) {
  return KvCache::kv_cache_bytes_per_token(config.num_layers, config.cache_kv_heads(), config.cache_head_dim(), dtype,
                                           config.mla.enabled());
}

uint64_t mha_equivalent_kv_bytes_per_token(const ModelConfig& config, KvDtype dtype) {
  if (!config.mla.enabled()) return kv_bytes_per_token(config, dtype);
  // Per head: a key of nope + rope and a value of v_head_dim, as K and V rows of one width would take
  // (the wider of the two, which is what an MHA cache with one head_dim stores).
  const MlaConfig& m = config.mla;
  const int64_t width = std::max(m.qk_head_dim(), m.v_head_dim);
  return KvCache::kv_cache_bytes_per_token(config.num_layers, config.num_heads, width, dtype);
}

uint64_t kv_cache_bytes(const ModelConfig& config, int64_t num_blocks, int64_t block_size, KvDtype dtype) {
  // model/kv_cache.cpp's layout: elements [layers, 2, blocks, block_size, kv_heads, head_dim], then
  // (int8/fp8) f32 scales [layers, 2, blocks, block_size, kv_heads] from the next 64-byte boundary.
  constexpr uint64_t kScaleAlignment = 64;
  const int64_t tensors = config.mla.enabled() ? 1 : 2;  // a latent cache has one row per layer (G28)
  const auto slots = static_cast<uint64_t>(config.num_layers * tensors * num_blocks * block_size * config.cache_kv_heads());
  const uint64_t elements = slots * static_cast<uint64_t>(config.cache_head_dim() * kernels::kv_element_bytes(dtype));
  if (!kernels::kv_dtype_has_scales(dtype)) return elements;
  return (elements + kScaleAlignment - 1) / kScaleAlignment * kScaleAlignment + slots * sizeof(float);
}

WeightBytes weight_bytes(const ModelConfig& config, const ModelWeights& weights) {
  WeightBytes b;
  uint64_t matrices = 0, vectors = floats_bytes(weights.final_norm);
  for (const auto& l : weights.layers) {
    for (const TensorView* m : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down, &l.mla.q, &l.mla.q_a, &l.mla.q_b,
                                &l.mla.kv_a, &l.mla.kv_b, &l.mla.o})
      if (m->data != nullptr) matrices += m->bytes();
    vectors += floats_bytes(l.mla.q_a_norm) + floats_bytes(l.mla.kv_a_norm) + floats_bytes(l.mla.w_uk_t) + floats_bytes(l.mla.w_uv);
    for (const auto* v : {&l.attn_norm, &l.q_bias, &l.k_bias, &l.v_bias, &l.q_norm, &l.k_norm, &l.ffn_norm}) {
      vectors += floats_bytes(*v);
    }
  }
  for (const auto& l : weights.layers) {
    for (const ExpertWeights& e : l.moe.experts) b.routed_expert_bytes += e.gate.bytes() + e.up.bytes() + e.down.bytes();
    b.routed_experts += static_cast<int64_t>(l.moe.experts.size());
    if (l.moe.has_shared()) matrices += l.moe.shared.gate.bytes() + l.moe.shared.up.bytes() + l.moe.shared.down.bytes();
    vectors += floats_bytes(l.moe.router) + floats_bytes(l.moe.score_bias) + floats_bytes(l.moe.shared_gate);
  }
  const uint64_t embedding = weights.token_embedding.bytes();
  const bool tied = weights.lm_head.data == weights.token_embedding.data;
  const uint64_t head = weights.lm_head.bytes();
  const uint64_t embedding_row = config.vocab_size > 0 ? embedding / static_cast<uint64_t>(config.vocab_size) : 0;
  b.resident = matrices + vectors + embedding + (tied ? 0 : head) + b.routed_expert_bytes;
  b.read_outside_experts = matrices + vectors + head + embedding_row;
  const int64_t moe_layers = b.routed_experts > 0 ? b.routed_experts / config.moe.num_experts : 0;
  b.read_per_token = b.read_per_step(static_cast<double>(moe_layers * config.moe.routing.top_k));
  return b;
}

uint64_t WeightBytes::read_per_step(double active_experts) const {
  if (routed_experts == 0) return read_outside_experts;
  const double per_expert = static_cast<double>(routed_expert_bytes) / static_cast<double>(routed_experts);
  return read_outside_experts + static_cast<uint64_t>(per_expert * active_experts);
}

CapacityPlan plan_capacity(const ModelConfig& config, uint64_t resident_weight_bytes, uint64_t memory_bytes,
                           int64_t context, int64_t block_size, KvDtype dtype) {
  if (context <= 0 || block_size <= 0) {
    throw InvalidArgument("capacity: context (" + std::to_string(context) + ") and block size (" +
                          std::to_string(block_size) + ") must be positive");
  }
  CapacityPlan p;
  p.memory_bytes = memory_bytes;
  p.weight_bytes = resident_weight_bytes;
  p.kv_bytes_per_token = kv_bytes_per_token(config, dtype);
  p.context = context;
  p.block_size = block_size;
  const uint64_t blocks_per_sequence = static_cast<uint64_t>((context + block_size - 1) / block_size);
  const uint64_t block_bytes = p.kv_bytes_per_token * static_cast<uint64_t>(block_size);
  p.kv_bytes_per_sequence = blocks_per_sequence * block_bytes;
  const uint64_t kv_budget = memory_bytes > resident_weight_bytes ? memory_bytes - resident_weight_bytes : 0;
  p.max_blocks = block_bytes > 0 ? static_cast<int64_t>(kv_budget / block_bytes) : 0;
  // The scales' alignment padding can push the last block over the budget.
  while (p.max_blocks > 0 && kv_cache_bytes(config, p.max_blocks, block_size, dtype) > kv_budget) --p.max_blocks;
  p.max_sequences = static_cast<int64_t>(static_cast<uint64_t>(p.max_blocks) / blocks_per_sequence);
  return p;
}

}  // namespace lemma::bench
