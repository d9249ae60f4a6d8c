// SchedulerStats: a snapshot of the scheduler's gauges and counters for metrics (lemma_requests_*,
// lemma_kv_blocks_*, lemma_prefix_cache_*, lemma_preemptions_total, lemma_swap_*). Plain data, copyable; taken on the
// engine thread and handed to whoever publishes it.
#pragma once

#include <array>
#include <cstdint>

#include "lemma/sched/request_status.h"

namespace lemma {

inline constexpr size_t kNumFinishedStatuses =
    static_cast<size_t>(RequestStatus::kFinishedFailed) - static_cast<size_t>(RequestStatus::kFinishedStopped) + 1;

// Index of a finished status in SchedulerStats::num_finished.
constexpr size_t finished_index(RequestStatus s) {
  return static_cast<size_t>(s) - static_cast<size_t>(RequestStatus::kFinishedStopped);
}

struct SchedulerStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0;  // including preempted and swapped requests
  int32_t num_swapped = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;  // referenced blocks (free cached blocks are not used)
  int32_t kv_blocks_cached = 0;
  int32_t host_blocks_total = 0;
  int32_t host_blocks_used = 0;
  // Prefix cache, counted once per request at its first admission.
  uint64_t prefix_cache_queries = 0;
  uint64_t prefix_cache_hits = 0;          // requests that reused at least one block
  uint64_t prefix_cache_queried_tokens = 0;
  uint64_t prefix_cache_hit_tokens = 0;
  uint64_t num_preemptions = 0;
  uint64_t num_swap_outs = 0;        // preemptions by swap: requests moved to the host tier
  uint64_t num_swap_ins = 0;         // swapped requests moved back
  uint64_t num_swap_fallbacks = 0;   // swap preemptions that recomputed instead (no host room; logged)
  uint64_t num_blocks_dropped = 0;   // blocks freed because they fell wholly before the sliding window
  uint64_t num_steps = 0;
  // Speculative decoding: drafts granted, and those the target model's samples confirmed.
  uint64_t num_draft_tokens = 0;
  uint64_t num_accepted_draft_tokens = 0;
  // Verifications by how many drafts they confirmed (index = accepted, at most 16 drafts per step).
  std::array<uint64_t, 17> num_verifications_by_accepted{};
  std::array<uint64_t, kNumFinishedStatuses> num_finished{};  // by finished_index(status)
};

}  // namespace lemma
