// The logits of streaming a token sequence through attention sinks (G10, kv/streaming_window.h):
// what `lemma logits --attention-sinks S --streaming-window W` prints and the sinks goldens check.
// Tokens are fed `step_tokens` at a time (1: the reference's one token per step; any size gives
// the same logits) over a KV cache of only StreamingWindow::max_live_blocks blocks, the evicted
// middle's blocks recycled as the stream moves on. Thread-safe for distinct calls.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "lemma/kv/streaming_window.h"
#include "lemma/model/model.h"

namespace lemma {

struct StreamingLogits {
  std::vector<float> logits;     // [tokens, vocab]: row t after reading tokens[0..t]
  int64_t cache_blocks = 0;      // blocks of the KV cache it ran in
  int64_t max_held_blocks = 0;   // the most blocks the sequence held at once
  int64_t block_size = 0;
};

// Streams `tokens` as streaming_sequence_logits does, handing each forward's logits to `on_rows`
// (first position, [rows, vocab]) instead of keeping them all; returns the cache figures (empty logits).
using StreamingRowsFn = std::function<void(int64_t first_position, std::span<const float> logits)>;
StreamingLogits stream_sequence(const Model& model, std::span<const int32_t> tokens, const StreamingWindow& streaming,
                                int64_t step_tokens, int num_threads, KvDtype kv_dtype, const StreamingRowsFn& on_rows);

// Throws InvalidArgument for an empty sequence, ids outside the vocabulary, step_tokens < 1 or a
// window streaming_window_error() refuses (S + W beyond the model's context).
StreamingLogits streaming_sequence_logits(const Model& model, std::span<const int32_t> tokens,
                                          const StreamingWindow& streaming, int64_t step_tokens = 1,
                                          int num_threads = 1, KvDtype kv_dtype = KvDtype::kF32);

}  // namespace lemma
