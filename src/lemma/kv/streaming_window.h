// StreamingWindow: StreamingLLM attention sinks (G10, Xiao et al. 2023) for one sequence: a token
// attends to the first `num_sinks` tokens of its sequence and to a rolling window of the last
// `window` tokens, itself included; the K/V of the middle is evicted (its blocks go back to the
// pool). The convention is the reference's (../shared/tools/sink_attention_ref.py): RoPE positions
// are positions inside the cache, so a query at t >= S + W sees the sinks from position S + W - 1
// and each window key at its true distance t - p. NOT equal to full attention once t >= S + W.
// Plain data and pure inline functions (model/, sched/ and server/ share it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace lemma {

struct StreamingWindow {
  int64_t num_sinks = 0;  // S: the first tokens, always attended
  int64_t window = 0;     // W: the most recent tokens attended (current one included); 0 = off

  bool enabled() const { return window > 0; }
  // Entries a query attends to at most (the reference's cache size).
  int64_t cache_tokens() const { return num_sinks + window; }
  // The first window key a query at `position` sees; keys [num_sinks, this) are evicted.
  int64_t first_window_key(int64_t position) const {
    return std::max<int64_t>(num_sinks, position - window + 1);
  }
  // Once the cache is full the query sits at slot S + W - 1 against the sink keys (their distance is
  // compressed); before that at its own position (ordinary causal attention).
  int64_t sink_query_position(int64_t position) const { return std::min(position, cache_tokens() - 1); }
  // Keys [0, this) that a query at `position` attends through the sink pass: the sinks its sliding
  // window of `window` keys does not reach (the window pass covers [position - window + 1, position]).
  int64_t sink_pass_keys(int64_t position) const {
    return std::min(num_sinks, std::max<int64_t>(0, position - window + 1));
  }
  // Positions [num_sinks, dead_end(c)) are never read again by a forward from c computed tokens.
  int64_t dead_end(int64_t num_computed_tokens) const {
    return std::max<int64_t>(num_sinks, num_computed_tokens - window + 1);
  }

  // Table entries [first_dead_block, dead_block_end(c)) of a block table lie wholly inside the
  // evicted middle for a forward from c computed tokens: their blocks can go back to the pool.
  int64_t first_dead_block(int64_t block_size) const { return (num_sinks + block_size - 1) / block_size; }
  int64_t dead_block_end(int64_t num_computed_tokens, int64_t block_size) const {
    return std::max(first_dead_block(block_size), dead_end(num_computed_tokens) / block_size);
  }
  // The most blocks a sequence holds at once when a step adds at most max_step_tokens: the sinks'
  // blocks plus those spanned by the window and a step (W + max_step_tokens - 1 positions).
  int64_t max_live_blocks(int64_t block_size, int64_t max_step_tokens) const {
    const int64_t span = window + std::max<int64_t>(1, max_step_tokens) - 1;
    return first_dead_block(block_size) + (span - 1 + block_size - 1) / block_size + 1;
  }

  friend bool operator==(const StreamingWindow&, const StreamingWindow&) = default;
};

// Empty when `w` is usable with a context of `max_context` tokens, else what is wrong, naming the
// field (attention_sinks / streaming_window) and the values.
inline std::string streaming_window_error(const StreamingWindow& w, int64_t max_context) {
  if (w.num_sinks < 0) return fmt::format("attention_sinks must be >= 0, got {}", w.num_sinks);
  if (w.window < 0) return fmt::format("streaming_window must be >= 1, got {}", w.window);
  if (w.window == 0)
    return w.num_sinks > 0 ? fmt::format("attention_sinks {} needs streaming_window >= 1", w.num_sinks) : std::string();
  if (max_context > 0 && w.cache_tokens() > max_context)
    return fmt::format("attention_sinks + streaming_window = {} exceeds the context of {} tokens", w.cache_tokens(),
                       max_context);
  return {};
}

}  // namespace lemma
