// The work side of the roofline: bytes a decode step reads per generated token and FLOPs a
// prefill performs, from the model's config and weights. Plain arithmetic; thread-safe.
#pragma once

#include <cstdint>

#include "lemma/model/model_config.h"
#include "lemma/model/model_weights.h"

namespace lemma::bench {

// Bytes a decode step of `batch` sequences reads per generated token: the weights once per step
// shared by the batch, plus each sequence's K/V over `mean_context` cached tokens.
double decode_bytes_per_token(uint64_t weight_read_bytes, uint64_t kv_bytes_per_token, double mean_context,
                              int64_t batch = 1);

// Mean context a decode step attends over when `steps` tokens are generated after `depth` cached
// ones (step i reads depth + i + 1 tokens' K/V): depth + (steps + 1) / 2.
double mean_decode_context(int64_t steps, int64_t depth = 0);

// FLOPs of one prefill of `tokens` tokens after `depth` cached ones, with logits for the last token
// only: 2 x (multiply-adds of every layer matrix) per token, causal attention (QK^T and PV over
// positions 0..p for token p), and the LM head once; a MoE layer counts its router, top_k experts and
// shared expert per token. Norms, RoPE and activations are not counted.
double prefill_flops(const ModelConfig& config, const ModelWeights& weights, int64_t tokens, int64_t depth = 0);

}  // namespace lemma::bench
