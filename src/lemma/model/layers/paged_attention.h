// Attention of new query tokens over keys/values stored in a block-table KV cache (causal, with an
// optional sliding window), for a batch of sequences. Tested against reference_sdpa. Pure apart
// from the caller-provided scratch; thread-safe for distinct outputs.
#pragma once

#include <cstdint>
#include <span>

#include "lemma/model/kv_cache.h"

namespace lemma::layers {

// One sequence's slice of the batch. Its new tokens sit at positions
// context_length - num_tokens .. context_length - 1 and are already written to the cache.
struct AttentionSequence {
  int64_t token_offset = 0;  // first row of this sequence in q / out
  int64_t num_tokens = 0;    // new tokens (queries)
  int64_t context_length = 0;  // tokens in the cache after this step (keys 0..context_length-1)
  std::span<const int32_t> block_table;
};

struct AttentionParams {
  int64_t num_heads = 0;
  float scale = 1.0f;           // usually 1/sqrt(head_dim)
  int64_t sliding_window = 0;   // 0 = unlimited; else keys with q_pos - k_pos < sliding_window
  int64_t head_begin = 0;       // computes query heads [head_begin, head_end) only (for splitting
  int64_t head_end = -1;        // the work across threads); -1 = num_heads
};

// q, out: [total_tokens, num_heads, head_dim] f32; scratch: >= max context_length floats.
void paged_attention(std::span<const float> q, const KvLayerView& cache, std::span<const AttentionSequence> sequences,
                     const AttentionParams& params, std::span<float> scratch, std::span<float> out);

}  // namespace lemma::layers
