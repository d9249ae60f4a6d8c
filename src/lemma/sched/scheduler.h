// Scheduler: iteration-level (continuous) batching. Each schedule() grants tokens under a per-step
// budget: running requests first, then waiting ones (chunked prefill) while KV capacity, the watermark
// and max_num_seqs allow; when blocks run out it preempts the newest running request (recompute or
// swap). update() applies a step's sampled tokens, checks stop conditions and finishes requests through
// one idempotent cleanup path. Owns the KvManager. Single-threaded: the engine thread owns it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "lemma/kv/kv_manager.h"
#include "lemma/sched/draft_source.h"
#include "lemma/sched/request.h"
#include "lemma/sched/scheduler_stats.h"
#include "lemma/sched/step_plan.h"

namespace lemma {

enum class PreemptionMode : uint8_t {
  kRecompute,  // free the blocks; the request recomputes its tokens later
  kSwap,       // copy the blocks to the host tier and back (recompute, logged and counted, when the
               // host tier cannot take them)
};

enum class SchedulingPolicy : uint8_t {
  kFcfs,      // arrival order; preempted requests go back to the front
  kPriority,  // (priority, arrival) order; the lowest-priority running request is preempted first
};

// Speculative decoding (G4): each request in decode is granted its next token plus up to
// `num_tokens` drafts from the DraftSource (set_draft_source), which the runner verifies in the same
// forward.
struct SpeculativeConfig {
  int num_tokens = 0;  // drafts per decoding request per step; 0: off
  // No drafts in a step where more than this many requests are running (0: no limit), as vLLM's
  // speculative_disable_by_batch_size: verifying 1 + K tokens per sequence costs little at batch 1 on
  // a CPU (weights stream once either way) but several times one token's step at batch 8 and up,
  // where the forward is bound by arithmetic.
  int disable_by_batch_size = 0;
};

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 2048;  // token budget per step
  int32_t max_num_seqs = 64;              // running requests at most
  int64_t max_model_len = 4096;           // prompt + output tokens at most
  bool enable_chunked_prefill = true;     // off: a prompt is prefilled in one step or waits
  int64_t long_prefill_token_threshold = 0;  // > 0 (with chunked prefill): at most this many tokens
                                             // per request per step
  PreemptionMode preemption_mode = PreemptionMode::kRecompute;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  SpeculativeConfig speculative;
};

class Scheduler {
 public:
  // Throws InvalidArgument for impossible settings.
  Scheduler(const SchedulerConfig& config, const KvManagerConfig& kv_config);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. Throws InvalidArgument (nothing queued) for a duplicate id, an empty prompt,
  // max_tokens < 1, or prompt + max_tokens beyond max_model_len or the KV capacity (with a sliding
  // window, the blocks the request holds at once: KvManager::max_live_blocks).
  void add_request(Request request);
  // add_request's checks alone: throws what it would throw, queues nothing.
  void validate(const Request& request) const;

  // Plans one step. Never throws for capacity reasons: what does not fit waits.
  StepPlan schedule();

  // Applies a step's results: advances num_computed_tokens, appends sampled tokens, finishes requests
  // that hit a stop condition. Requests aborted or preempted since `plan` was made are skipped.
  // A request that needed a sample but got none finishes as kFinishedFailed. The samples of a request
  // that asked for logprobs move into its output (RequestOutput::logprobs).
  std::vector<RequestOutput> update(const StepPlan& plan, StepResult result);

  // Parallel sampling: starts `child_id` with `parent_id`'s prompt, sharing its prompt blocks
  // (copy-on-write). The child recomputes only the last prompt token, so it samples its own first
  // token. Returns false (nothing changed) unless the parent is running with at least
  // num_prompt_tokens - 1 tokens computed and a running slot is free; the caller may then retry later
  // or add the child as an ordinary request. When a sliding window has already dropped blocks the child
  // would read, the child is queued as an ordinary request instead (it recomputes its prompt) and true
  // is returned. Throws InvalidArgument for a duplicate child id.
  bool fork_request(RequestId parent_id, RequestId child_id, RequestOptions options);

  // Where drafts come from when config.speculative.num_tokens > 0 (null: none). Not owned; it must
  // outlive the scheduler's use of it.
  void set_draft_source(DraftSource* source) { draft_source_ = source; }

  // Beam search (engine/beam_search.h): the engine chooses a beam sequence's tokens (Request::is_beam).
  // update() only advances its computed tokens; once all are computed the sequence is *parked*
  // (granted nothing) until the engine appends its next token, forks it or releases it. A parked
  // sequence is preempted by recompute (never swapped: it would come back with nothing to compute),
  // and when a step would run nothing while requests wait, the newest parked sequence is preempted
  // to the back of the waiting queue, so beams waiting for their siblings never deadlock admission.
  //
  // `child_id` continues beam sequence `parent_id` at its current length: same tokens and options.
  // With the parent running and a running slot free, it shares every parent block (copy-on-write)
  // and its computed tokens; otherwise it is queued at the front to recompute them. Throws
  // InvalidArgument for an unknown or non-beam parent, or a child id in use.
  void fork_sequence(RequestId parent_id, RequestId child_id);
  // Appends the engine's chosen tokens to live beam sequence `id`. Throws InvalidArgument for an
  // unknown or non-beam id, or tokens beyond max_model_len.
  void append_tokens(RequestId id, std::span<const int32_t> token_ids);
  // Ends a beam sequence the engine no longer needs: its blocks are freed and it is not counted as a
  // finished request. False when the id is unknown.
  bool release(RequestId id);

  // Finishes a live request with `status` (a finished state) and frees its blocks. nullopt when the
  // id is unknown or already finished (idempotent).
  std::optional<RequestOutput> abort(RequestId id, RequestStatus status = RequestStatus::kFinishedCancelled);

  // Finishes every live request whose deadline is set and <= now with kFinishedTimeout.
  std::vector<RequestOutput> abort_expired(double now);

  const Request* find(RequestId id) const;
  SchedulerStats stats() const;
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  bool has_unfinished_requests() const { return !requests_.empty(); }
  uint64_t num_preemptions() const { return num_preemptions_; }
  uint64_t num_finished() const { return num_finished_; }
  const SchedulerConfig& config() const { return config_; }
  const KvManager& kv() const { return kv_; }
  // For handing KV between engines (G24: KvManager::begin_import), between steps only.
  KvManager& kv_for_handoff() { return kv_; }

  // Throws std::logic_error when queues, statuses and the KvManager disagree (for tests).
  void check_invariants() const;

 private:
  struct Entry {
    Request request;
    int64_t num_tokens_sent = 0;  // tokens the runner has been told about; 0: it has no state
    std::vector<int32_t> dropped_unsent;  // table indices dropped (sliding window) the runner still lists
    // Speculative decoding: drafts to propose next (adapted to this request's acceptance; 0 = the
    // configured number until the first verification).
    int32_t draft_len = 0;
    // Decode steps left without drafts after a single draft was refused: a request whose drafts keep
    // failing costs one draft every kDraftPauseSteps + 1 steps, not one per step (a draft model's
    // forward is not free).
    int32_t draft_pause = 0;
  };
  Entry& entry(RequestId id) { return requests_.at(id); }
  bool before(const Request& a, const Request& b) const;  // queue order under the policy
  void enqueue_waiting(RequestId id, bool at_front);
  void drop_dead_blocks();
  void validate_streaming(const Request& request) const;  // attention sinks (G10)
  void preempt_back(StepPlan& plan);
  // Takes running request `id` out (swap when the mode and host tier allow and it has tokens left
  // to compute, else recompute) and queues it again.
  void preempt(StepPlan& plan, RequestId id, bool at_front);
  // The deadlock breaker of beam search (see fork_sequence): preempts the newest parked running
  // beam sequence to the back of the queue. False when there is none.
  bool preempt_parked(StepPlan& plan);
  void schedule_running(StepPlan& plan, int64_t& budget, bool& preempted);
  // Asks the draft source, once per step, for every running request whose next step is one decode
  // token (speculative decoding); fills draft_queries_ / proposals_ in running_ order.
  void propose_drafts();
  void schedule_waiting(StepPlan& plan, int64_t& budget);
  int64_t grant(const Request& r, int64_t num_computed_tokens, int64_t budget) const;
  void add_new_request(StepPlan& plan, Entry& e, int64_t num_new_tokens);
  RequestOutput finish(RequestId id, RequestStatus status, std::vector<int32_t> new_token_ids, bool counted = true);

  SchedulerConfig config_;
  KvManager kv_;
  std::unordered_map<RequestId, Entry> requests_;  // every live request
  std::deque<RequestId> waiting_;
  std::vector<RequestId> running_;  // admission order (FCFS) or policy order; the back is preempted first
  std::vector<std::pair<RequestId, size_t>> sampled_index_;  // update()'s (id, index) lookup, reused
  uint64_t next_step_id_ = 0;
  uint64_t num_preemptions_ = 0;
  uint64_t num_swap_outs_ = 0, num_swap_ins_ = 0, num_swap_fallbacks_ = 0, num_blocks_dropped_ = 0;
  uint64_t num_draft_tokens_ = 0, num_accepted_draft_tokens_ = 0;
  std::array<uint64_t, 17> num_verifications_by_accepted_{};
  DraftSource* draft_source_ = nullptr;
  std::vector<DraftQuery> draft_queries_;  // this step's questions to the draft source, reused
  std::vector<Drafts> proposals_;          // its answers
  uint64_t num_finished_ = 0;
  std::array<uint64_t, kNumFinishedStatuses> num_finished_by_status_{};
  struct {
    uint64_t queries = 0, hits = 0, queried_tokens = 0, hit_tokens = 0;
  } prefix_;  // first admissions only (re-admissions after preemption and blocked retries not counted)
};

}  // namespace lemma
