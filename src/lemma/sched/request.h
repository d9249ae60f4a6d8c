// Request: one generation request as the scheduler sees it: its tokens (prompt, then outputs), how many
// of them the KV cache holds (num_computed_tokens), its status, stop conditions and sampling parameters.
// No prefill/decode modes: the scheduler grants tokens to close num_tokens() - num_computed_tokens().
// Tokens change only through append_output_tokens(). Not thread-safe (owned by the Scheduler).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lemma/kv/streaming_window.h"
#include "lemma/sampling/sampling_params.h"
#include "lemma/sched/pooling.h"
#include "lemma/sched/request_status.h"
#include "lemma/sched/stop_conditions.h"

namespace lemma {

struct LoraAdapter;  // model/lora/lora_adapter.h: carried, never read, by the scheduler

using RequestId = uint64_t;

struct RequestOptions {
  StopConditions stop;
  SamplingParams sampling;
  double arrival_time = 0.0;          // seconds on the engine's clock; FCFS order
  double deadline = 0.0;              // seconds on the engine's clock; <= 0: none (see abort_expired)
  int32_t priority = 0;               // lower runs first under the priority policy
  std::vector<uint64_t> extra_keys;   // prefix-cache namespace: adapter id, model id, cache salt
  // Attention sinks (G10): attend to the first S tokens and the last W only, the middle's KV blocks
  // freed as the request goes on; no prefix cache, no drafts, no beams (kv/streaming_window.h).
  StreamingWindow streaming = {};
  // The LoRA adapter the request runs on (G29), or null for the base model. Holding it keeps its
  // weights alive until the request ends, even when the adapter is unloaded meanwhile. The Engine
  // adds its identity to extra_keys, so prefix-cache hits never cross adapters.
  std::shared_ptr<const LoraAdapter> lora = {};
  // Embedding requests: the final hidden states pooled over the prompt (sched/pooling.h); such a
  // request computes every prompt token (no prefix-cache reads) and has max_tokens 1.
  Pooling pooling = Pooling::kNone;
};

class Request {
 public:
  Request(RequestId id, std::vector<int32_t> prompt_token_ids, RequestOptions options = {});

  RequestId id() const { return id_; }
  RequestStatus status() const { return status_; }
  bool is_finished() const { return lemma::is_finished(status_); }

  std::span<const int32_t> token_ids() const { return token_ids_; }  // prompt then outputs
  std::span<const int32_t> prompt_token_ids() const { return std::span(token_ids_).first(num_prompt_tokens_); }
  std::span<const int32_t> output_token_ids() const { return std::span(token_ids_).subspan(num_prompt_tokens_); }
  int64_t num_tokens() const { return static_cast<int64_t>(token_ids_.size()); }
  int64_t num_prompt_tokens() const { return static_cast<int64_t>(num_prompt_tokens_); }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens(); }
  int64_t num_computed_tokens() const { return num_computed_tokens_; }
  // Beam search: the engine, not update(), chooses this sequence's tokens.
  bool is_beam() const { return options_.sampling.beam_search.has_value(); }

  const RequestOptions& options() const { return options_; }
  const StopConditions& stop() const { return options_.stop; }
  const SamplingParams& sampling() const { return options_.sampling; }
  double arrival_time() const { return options_.arrival_time; }
  double deadline() const { return options_.deadline; }
  int32_t priority() const { return options_.priority; }
  std::span<const uint64_t> extra_keys() const { return options_.extra_keys; }
  const StreamingWindow& streaming() const { return options_.streaming; }
  bool is_streaming() const { return options_.streaming.enabled(); }
  bool is_pooling() const { return options_.pooling != Pooling::kNone; }

  int64_t num_cached_tokens() const { return num_cached_tokens_; }  // prefix-cache hit at first admission
  int32_t num_preemptions() const { return num_preemptions_; }

  // The only way tokens change: sampled tokens join the end.
  void append_output_tokens(std::span<const int32_t> token_ids);

  // Scheduler bookkeeping.
  void set_status(RequestStatus status) { status_ = status; }
  void set_num_computed_tokens(int64_t n);
  void set_num_cached_tokens(int64_t n) { num_cached_tokens_ = n; }
  void count_preemption() { ++num_preemptions_; }
  // Room for `n` tokens in all, so appending outputs up to n never reallocates.
  void reserve_tokens(int64_t n) { token_ids_.reserve(static_cast<size_t>(n)); }

 private:
  RequestId id_;
  std::vector<int32_t> token_ids_;
  size_t num_prompt_tokens_;
  RequestOptions options_;
  RequestStatus status_ = RequestStatus::kWaiting;
  int64_t num_computed_tokens_ = 0;
  int64_t num_cached_tokens_ = 0;
  int32_t num_preemptions_ = 0;
};

}  // namespace lemma
