// EngineClient: the narrow interface the HTTP server needs from a serving engine (submit a
// tokenised, validated request; cancel it; read a few gauges), and the plain data it exchanges.
// Implementations must be thread-safe: the server calls them from its I/O threads concurrently.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lemma/kv/streaming_window.h"
#include "lemma/sampling/sampler.h"
#include "lemma/sampling/sampling_params.h"
#include "lemma/sched/pooling.h"
#include "lemma/sched/request_status.h"

namespace lemma {
struct LoraAdapter;  // model/lora/lora_adapter.h
}

namespace lemma::server {

// One request as the engine sees it: already validated and tokenised by the server.
// Stop strings are NOT here: the server applies them to the detokenised text (holding back text
// that may be a stop-string prefix) and cancels the request once every choice has stopped.
struct CompletionRequest {
  std::string request_id;             // unique while the request lives
  std::vector<int32_t> prompt_ids;
  SamplingParams sampling;
  int64_t max_tokens = 16;            // per choice; > 0
  int n = 1;                          // parallel choices (indices 0..n-1), sharing the prompt
  std::vector<int32_t> stop_token_ids;  // end a choice like EOS (the token counts in usage)
  bool ignore_eos = false;            // keep going past the model's end-of-generation ids
  std::optional<std::chrono::milliseconds> timeout;  // the engine may also enforce it
  StreamingWindow streaming = {};     // attention sinks (G10); off: ordinary attention
  std::shared_ptr<const LoraAdapter> lora = {};  // the adapter the request's `model` names (G29), or null
  // An embedding request (sched/pooling.h): n 1, max_tokens 1; its final delta carries the vector.
  Pooling pooling = Pooling::kNone;
};

// New output of one choice. The engine sends, per choice, zero or more deltas with tokens and
// exactly one final delta (finish_reason set, may also carry tokens). Deltas of one choice
// arrive in order; different choices may interleave.
struct CompletionDelta {
  int index = 0;                          // choice index in [0, n)
  std::vector<int32_t> token_ids;         // every sampled token, including a final EOS/stop token
  std::vector<SampleResult> logprobs;     // parallel to token_ids when sampling.logprobs, else empty:
                                          // the sampler's own record (raw logprob, top entries best first)
  // Why the choice ended: a finished RequestStatus, the one table of ends (sched/request_status.h,
  // which also names its OpenAI finish_reason). Stopped/length end the choice normally; cancelled
  // follows a cancel(); timed out and failed carry `error`.
  std::optional<RequestStatus> finish_reason;
  std::string error;                      // message when finish_reason is kFinishedTimeout or kFinishedFailed
  // Set on the final delta of a choice (the server reads them from any choice's final delta):
  int64_t cached_prompt_tokens = 0;       // prompt tokens served from the prefix cache
  double queue_seconds = 0.0;             // arrival at the engine -> first scheduled
  std::vector<float> embedding = {};      // a pooling request's final delta: the pooled hidden state
};

// Where the engine writes a request's output. push() never blocks and may be called from any
// one engine thread at a time per request; after the final delta of every choice it is not called
// again. The server's implementation (OutputBuffer) is bounded: see output_buffer.h.
class CompletionSink {
 public:
  virtual ~CompletionSink() = default;
  virtual void push(CompletionDelta delta) = 0;
};

// Gauges and counters the engine exposes to /metrics (sampled on each scrape).
// A histogram filled on the engine thread and rendered by /metrics: cumulative counts per upper
// bound (Prometheus buckets; the +Inf one is `count`), with the sum. No counts: nothing observed.
struct CumulativeHistogram {
  std::vector<int64_t> bucket_counts;
  double sum = 0.0;
  int64_t count = 0;

  template <size_t N>
  void observe(const double (&bounds)[N], double value) {
    bucket_counts.resize(N, 0);
    for (size_t b = 0; b < N; ++b)
      if (value <= bounds[b]) ++bucket_counts[b];
    sum += value;
    ++count;
  }
};

// One data-parallel replica's own figures (`--data-parallel-size`), beside the summed EngineStats.
struct ReplicaStats {
  int64_t requests_running = 0;
  int64_t requests_waiting = 0;
  int64_t kv_blocks_used = 0;
  int64_t prefix_cache_queries = 0;   // monotonically increasing
  int64_t prefix_cache_hits = 0;      // monotonically increasing
  int64_t routed_requests = 0;        // monotonically increasing
  int64_t routed_matched_tokens = 0;  // prompt tokens the router expected this replica to hold
};

struct EngineStats {
  int64_t requests_running = 0;
  int64_t requests_waiting = 0;
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  int64_t prefix_cache_queries = 0;  // monotonically increasing
  int64_t prefix_cache_hits = 0;     // monotonically increasing
  int64_t prefix_cache_queried_tokens = 0;  // prompt tokens looked up; monotonically increasing
  int64_t prefix_cache_hit_tokens = 0;      // of those, served from cached blocks; monotonically increasing
  int64_t preemptions = 0;           // monotonically increasing
  int64_t swap_outs = 0;          // monotonically increasing
  int64_t swap_ins = 0;           // monotonically increasing
  int64_t swap_fallbacks = 0;     // swap preemptions recomputed instead; monotonically increasing
  int64_t spec_draft_tokens = 0;     // speculative drafts verified; monotonically increasing
  int64_t spec_accepted_tokens = 0;  // of those, confirmed by the target's samples
  std::array<int64_t, 17> spec_acceptance_lengths{};  // verifications by drafts confirmed (0..16)
  int64_t requests_swapped = 0;
  int64_t host_blocks_used = 0;
  int64_t kv_blocks_dropped = 0;  // sliding window; monotonically increasing
  // Sequences per engine step: cumulative bucket counts for kBatchSizeBuckets, plus sum/count.
  std::vector<int64_t> batch_size_bucket_counts;  // empty: not reported
  double batch_size_sum = 0.0;
  int64_t batch_size_count = 0;
  // MoE models (G27), per engine step: each expert's routed tokens (mean over the MoE layers), and the
  // load imbalance (busiest expert's tokens over the mean, worst layer). Never observed for dense models.
  CumulativeHistogram moe_expert_tokens;   // kMoeExpertTokensBuckets
  CumulativeHistogram moe_load_imbalance;  // kMoeLoadImbalanceBuckets
  // Prefill/decode disaggregation only (G24): prompts handed from the prefill engine to the decode
  // engine, the blocks and bytes carried, and the seconds spent exporting and importing them.
  int64_t kv_handoffs = 0;        // monotonically increasing
  int64_t kv_handoff_blocks = 0;  // monotonically increasing
  int64_t kv_handoff_bytes = 0;   // monotonically increasing
  double kv_handoff_seconds = 0;  // monotonically increasing
  // Data parallelism only: each replica's figures (the fields above are their sums). Empty otherwise.
  std::vector<ReplicaStats> replicas;
};

class EngineClient {  // thread-safe
 public:
  virtual ~EngineClient() = default;
  // Takes the request. Returns false, without calling the sink, when the engine's queue is full
  // (the server answers 429 with Retry-After). Once accepted, every choice ends with a final delta,
  // also after cancel().
  virtual bool submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) = 0;
  // Stops a request early (client gone, stop string matched, timeout, slow reader). Idempotent;
  // unknown or finished ids are ignored. The server calls it at most once per request.
  virtual void cancel(const std::string& request_id) = 0;
  virtual EngineStats stats() const { return {}; }
};

// Upper bounds of the lemma_batch_size histogram (the +Inf bucket is implied).
inline constexpr double kBatchSizeBuckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
// Upper bounds of lemma_moe_expert_tokens and lemma_moe_load_imbalance.
inline constexpr double kMoeExpertTokensBuckets[] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
inline constexpr double kMoeLoadImbalanceBuckets[] = {1, 1.25, 1.5, 2, 3, 4, 8, 16, 32, 64};

}  // namespace lemma::server
