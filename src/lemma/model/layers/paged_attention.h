// Attention of new query tokens over keys/values stored in a block-table KV cache (causal, with an
// optional sliding window), for a batch of sequences, with the flash-attention kernels
// (kernels/attention): keys are cut into fixed splits of kernels::kFlashSplitKeys and folded in
// split order, so each output row is bitwise independent of the batch it runs in, of how its
// sequence's prompt was chunked and of the thread count. Tested against reference_sdpa.
// Pure apart from the caller-provided scratch; not re-entrant on the same scratch.
#pragma once

#include <cstdint>
#include <span>

#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_scratch.h"
#include "lemma/kv/streaming_window.h"
#include "lemma/model/kv_cache.h"
#include "lemma/model/layers/tree_keys.h"
#include "lemma/model/thread_team.h"

namespace lemma::layers {

// One sequence's slice of the batch. Its new tokens sit at positions
// context_length - num_tokens .. context_length - 1 and are already written to the cache.
// A token tree instead (tree speculation): its nodes sit in slots context_length - num_tokens + r
// and attend as TreeKeys says, each row bitwise as its path would as a chain; no sliding window.
struct AttentionSequence {
  int64_t token_offset = 0;  // first row of this sequence in q / out
  int64_t num_tokens = 0;    // new tokens (queries)
  int64_t context_length = 0;  // tokens in the cache after this step (keys 0..context_length-1)
  std::span<const int32_t> block_table;
  const TreeKeys* tree = nullptr;  // null: a causal chain
  // Attention sinks (G10, kv/streaming_window.h), or off: a row at position t attends keys
  // [0, S) and [max(S, t - W + 1), t] (no tree, no layer sliding window). The window pass reads q
  // with a sliding window of W; the sinks it does not reach are read by a sink pass with sink_q,
  // the same rows rotated for streaming.sink_query_position(t), and folded in before the splits.
  StreamingWindow streaming = {};
  const float* sink_q = nullptr;  // [num_tokens, num_heads, head_dim], this sequence's rows only
};

struct AttentionParams {
  int64_t num_heads = 0;        // query heads; a multiple of the cache's num_kv_heads
  float scale = 1.0f;           // usually 1/sqrt(head_dim)
  int64_t sliding_window = 0;   // 0 = unlimited; else keys with q_pos - k_pos < sliding_window
};

// Floats of scratch paged_attention needs for these sequences (about 2 x (head_dim + 2) per query
// row and head for long prompts; x the number of splits for short ones).
int64_t paged_attention_scratch_floats(std::span<const AttentionSequence> sequences, const AttentionParams& params,
                                       int64_t head_dim);

// q, out: [total_tokens, num_heads, head_dim] f32; scratch: >= paged_attention_scratch_floats().
// Work is spread over `team` (nullptr: the calling thread) by (sequence, KV head, query block or
// split); the result does not depend on the team's size. `kernel_scratch`: one per team thread
// (ThreadTeam's worker index), lent to the flash kernels that stage tiles (AMX); empty makes those
// kernels allocate their own per call.
void paged_attention(std::span<const float> q, const KvLayerView& cache, std::span<const AttentionSequence> sequences,
                     const AttentionParams& params, std::span<float> scratch, std::span<float> out,
                     ThreadTeam* team, kernels::Isa isa, std::span<kernels::KernelScratch> kernel_scratch = {});
void paged_attention(std::span<const float> q, const KvLayerView& cache, std::span<const AttentionSequence> sequences,
                     const AttentionParams& params, std::span<float> scratch, std::span<float> out,
                     ThreadTeam* team = nullptr);  // kernels::detected_isa()

}  // namespace lemma::layers
