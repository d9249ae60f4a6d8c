// ForwardBatch: the input of one model forward, a batch of sequences each with its new token ids,
// how many of its tokens the KV cache already holds, and its block table. Plain data (spans into
// caller-owned memory); the caller keeps the memory alive during forward().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lemma/kv/streaming_window.h"

namespace lemma {

struct LoraAdapter;  // model/lora/lora_adapter.h

enum class LogitsRequest {
  kNone,  // no logits (e.g. a prefill chunk that is not the last)
  kLast,  // logits of the last new token only (generation)
  kAll,   // logits of every new token (scoring, perplexity, speculative verification)
};

struct SequenceInput {
  std::span<const int32_t> token_ids;  // new tokens; they get positions num_cached .. num_cached + n - 1
  int64_t num_cached = 0;              // tokens of this sequence already in the cache (positions 0..num_cached-1)
  // Block ids covering positions 0 .. num_cached + n - 1; entries wholly before
  // config.first_attended_position(num_cached) (or in a streaming sequence's evicted middle) are not
  // read (may be -1 once freed).
  std::span<const int32_t> block_table;
  LogitsRequest logits = LogitsRequest::kLast;
  // Token tree (tree speculation, G12), or empty for the usual causal chain. Else one entry per new
  // token: the index of its parent among the new tokens, or -1 for a child of the last cached token;
  // parents precede their children. New token i still goes to cache slot num_cached + i (the block
  // table covers num_cached + n slots), but its RoPE position is num_cached + depth(i) (a root has
  // depth 0) and it attends to the cached tokens plus its ancestors and itself, seen in depth order:
  // its logits are the bits the same path run as a chain would give (model/token_tree.h).
  std::span<const int32_t> tree_parents = {};
  // Attention sinks (G10): when enabled, each new token attends to the sequence's first
  // streaming.num_sinks tokens and its last streaming.window tokens (itself included), positions as
  // kv/streaming_window.h says; block table entries wholly inside the evicted middle
  // [num_sinks, streaming.dead_end(num_cached)) are not read (may be -1). Not with a token tree, a
  // model with sliding-window layers or dynamic-NTK RoPE (InvalidArgument).
  StreamingWindow streaming = {};
  // The LoRA adapter this sequence runs on (G29), or null for the base model. Sequences of one batch
  // may use different adapters; the caller keeps the adapter alive during forward().
  const LoraAdapter* lora = nullptr;
  // Empty: each new token's row is its embedding. Else [num_tokens, hidden] f32 rows that replace the
  // token embeddings (DeepSeek's multi-token-prediction module feeds its eh_proj outputs, G30);
  // token_ids still say how many tokens there are (their ids are checked but not looked up).
  std::span<const float> input_embeddings = {};

  bool is_tree() const { return !tree_parents.empty(); }
  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t context_length() const { return num_cached + num_tokens(); }
  int64_t num_logit_rows() const {
    return logits == LogitsRequest::kAll ? num_tokens() : logits == LogitsRequest::kLast ? 1 : 0;
  }
};

struct ForwardBatch {
  std::vector<SequenceInput> sequences;

  int64_t num_tokens() const {
    int64_t n = 0;
    for (const auto& s : sequences) n += s.num_tokens();
    return n;
  }
  // Rows of the logits output: sequences in order, each contributing num_logit_rows().
  int64_t num_logit_rows() const {
    int64_t n = 0;
    for (const auto& s : sequences) n += s.num_logit_rows();
    return n;
  }
  int64_t max_context_length() const {
    int64_t n = 0;
    for (const auto& s : sequences) n = s.context_length() > n ? s.context_length() : n;
    return n;
  }
};

}  // namespace lemma
