// Engine: one serving step at a time — plan = scheduler.schedule(); out = runner.run(plan);
// scheduler.update(plan, out) — turning sampled tokens into per-request outputs. Also parallel
// sampling (n > 1), the one layer that fans a request out into choices: extra choices fork from
// choice 0 once its prompt is computed, sharing the prompt's KV blocks copy-on-write, and each output
// says which choice it is; and beam search (G12), whose beams run as sequences of the same batch.
// A forward that throws fails only the requests of that step.
// Synchronous and single-threaded (EngineService runs it on its own thread); deterministic for a
// given sequence of calls, which the tests rely on.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lemma/engine/beam_search.h"
#include "lemma/engine/kv_handoff.h"
#include "lemma/model/moe/moe_step_stats.h"
#include "lemma/engine/request_trace.h"
#include "lemma/model/model.h"
#include "lemma/runtime/model_runner.h"
#include "lemma/sched/scheduler.h"
#include "lemma/spec/speculative_options.h"

namespace lemma {

struct EngineConfig {
  SchedulerConfig scheduler;
  KvManagerConfig kv;            // num_device_blocks, block_size, host blocks, watermark, prefix caching
                                 // (kv.sliding_window is set from the model)
  KvDtype kv_dtype = KvDtype::kF32;  // KV cache element type (G23)
  int num_threads = 1;           // threads per forward
  uint64_t default_seed = 0;     // for requests whose SamplingParams carry no seed
  bool keep_logits = false;      // ModelRunner::last_logits (tests)
  // When every layer of the model has a sliding window, free the blocks wholly before the widest one
  // (their keys are never read again). Off: sequences keep every block (for comparisons).
  bool drop_blocks_outside_window = true;
  // Speculative decoding (G4): where drafts come from and how many per step (sets
  // scheduler.speculative.num_tokens); drafts are verified in the step's one forward.
  spec::SpeculativeOptions speculative;
  // Jump-forward decoding: a constrained request's forced text (the grammar's only continuation) is
  // proposed as up to this many drafts per step, verified like any draft; 0: off.
  int jump_forward_tokens = 8;
};

// A beam-search choice's hypothesis: its summed token log-probabilities and its length-penalised score.
struct BeamScore {
  double cumulative_logprob = 0.0;
  double score = 0.0;
};

// New tokens (or the end) of one request after a step or an abort.
struct EngineOutput {
  RequestOutput output;  // output.logprobs: parallel to its new tokens when the request asked for logprobs
  std::string error;     // when output.status == kFinishedFailed
  int choice = 0;        // which choice of its request (output.id - the request's id)
  std::optional<BeamScore> beam;  // beam search: the hypothesis this (final, whole) output returns
};

// The seed of choice i > 0 of a request seeded `seed` (choice 0 keeps `seed`, so it equals the n = 1
// run). A splitmix64-style mix, also fit for deriving per-request seeds from a server seed.
uint64_t choice_seed(uint64_t seed, uint64_t i);

struct StepReport {
  std::vector<EngineOutput> outputs;
  std::vector<RequestId> first_scheduled;  // requests that got their first tokens granted this step
                                           // (the plan's NewRequestData::first_scheduled)
  int64_t num_sequences = 0;               // sequences in the step's forward (0: idle step)
  int64_t num_tokens = 0;
  moe::MoeStepStats moe;                   // the forward's MoE routing statistics (G27); empty for dense models
};

class Engine {
 public:
  // Throws InvalidArgument for impossible settings (from the scheduler, KV manager or runner).
  Engine(const Model& model, const EngineConfig& config);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Internal beam-search sequences run as ids from here up; requests use ids below it.
  static constexpr RequestId kFirstBeamSequence = RequestId{1} << 62;

  // Queues a request with `n` choices (parallel sampling). Choice i runs as id + i (the caller keeps
  // ids [id, id + n) for it) with seed choice_seed(seed, i) when the options carry a seed (else the
  // runner's default_seed ^ (id + i)); choices i > 0 share choice 0's prompt blocks once it has
  // computed them, or run as ordinary requests when it has finished first. Throws InvalidArgument
  // (nothing queued) like Scheduler::add_request, for n < 1, an id in [id, id + n) in use, prompt
  // token ids outside the vocabulary or invalid sampling parameters.
  // Beam search (options.sampling.beam_search, width W): the request runs as up to W internal
  // sequences (engine_beams.cpp) and returns only at the end, choice i being the i-th best of the
  // hypotheses (n <= W), each as one final output with all its tokens and `beam` set. Also refused:
  // n > W, W > max_num_seqs, or W sequences of prompt + max_tokens beyond the KV cache.
  void add_request(RequestId id, std::vector<int32_t> prompt, RequestOptions options, int n = 1);

  // Ends one live choice (idempotent: nullopt when unknown or finished). Aborting a choice of a beam
  // search ends the whole search: the other choices' final outputs come from their own abort() or
  // with the next step().
  std::optional<EngineOutput> abort(RequestId id, RequestStatus status = RequestStatus::kFinishedCancelled);
  std::vector<EngineOutput> abort_expired(double now);

  StepReport step();

  bool has_unfinished_requests() const {
    return scheduler_.has_unfinished_requests() || !pending_choices_.empty() || !beam_requests_.empty() ||
           !beam_outputs_.empty();
  }
  // Prefill/decode disaggregation (G24, engine_handoff.cpp), between steps on the engine's thread.
  // How many leading full blocks of `token_ids` this engine's prefix cache holds.
  int32_t num_cached_prefix_blocks(std::span<const int32_t> token_ids, std::span<const uint64_t> extra_keys) const;
  // The K/V of the full blocks of `token_ids` from `first_block` on, as far as this engine's prefix
  // cache holds them without a gap (none when it holds fewer than first_block + 1).
  KvHandoff export_prefix(std::span<const int32_t> token_ids, std::span<const uint64_t> extra_keys,
                          int32_t first_block);
  // Files a handoff's blocks in this engine's prefix cache, so a request on those tokens starts as a
  // prefix hit; returns the blocks written. 0 when the receiver no longer holds the blocks before
  // `first_block` or has no free blocks: the request then computes them itself, with the same result.
  int32_t import_prefix(KvHandoff& handoff);

  const Scheduler& scheduler() const { return scheduler_; }
  const ModelRunner& runner() const { return runner_; }
  const Model& model() const { return model_; }

 private:
  struct PendingChoice {
    RequestId parent = 0, child = 0;
    std::vector<int32_t> prompt;
    RequestOptions options;
  };
  // Queues choice `child` of `parent` (same prompt, its own options) to start as a fork.
  void add_choice(RequestId parent, RequestId child, RequestOptions options);
  bool id_in_use(RequestId id) const;
  void start_pending_choices();
  // Every output leaves through here, tagged with its choice. A finished one (finish, abort, timeout,
  // failed step) is dropped from the runner at once, so nothing of it outlives the call that ended
  // it (ModelRunner::forget).
  EngineOutput output_of(RequestOutput out, std::string error = {});
  void fail_step(const StepPlan& plan, const std::string& message, StepReport& report);

  // Beam search (engine_beams.cpp). A request's live beam b runs as scheduler sequence
  // sequences[b]; `ready` holds the candidates of those whose tokens are all computed (parked), and
  // once every live beam is ready the search takes one step: beams without a continuation are
  // released, a beam with k continuations keeps its sequence for the first and forks k - 1 copies
  // (copy-on-write) for the others, then each appends its chosen token.
  // A request starts (becomes active) only when its W sequences of full length fit beside those of
  // the active ones, in slots and in KV blocks: parked beams wait for their siblings, and without
  // this bound the siblings of several searches could keep each other out forever. Requests start
  // in arrival order.
  struct BeamRequest {
    RequestId id = 0;
    int n = 1;
    BeamSearch search;
    std::vector<int32_t> prompt;  // until it starts
    RequestOptions options;       // until it starts
    int64_t num_blocks = 0;       // W x blocks of a whole sequence: what it may come to hold
    bool active = false;
    std::vector<RequestId> sequences = {};
    std::unordered_map<RequestId, std::vector<TokenLogprob>> ready = {};
    StopConditions stop = {};
    int64_t num_prompt_tokens = 0;
    int64_t num_cached_tokens = 0;
    RequestId first_sequence = 0;  // its first scheduling is the request's
    double deadline = 0.0;
    bool logprobs = false;
  };
  void add_beam_request(RequestId id, std::vector<int32_t> prompt, RequestOptions options, int n);
  // Starts queued beam requests, in order, while they fit beside the active ones.
  void start_beam_requests();
  BeamRequest* beam_request_of_choice(RequestId id);
  BeamRequest* beam_request_of_sequence(RequestId seq);
  // Moves the candidates of beam sequences out of `result` (before the scheduler consumes it).
  std::vector<std::pair<RequestId, std::vector<TokenLogprob>>> take_beam_candidates(StepResult& result) const;
  // Records the parked sequences' candidates and steps every request whose live beams are all ready.
  void advance_beams(const StepPlan& plan, std::vector<std::pair<RequestId, std::vector<TokenLogprob>>> candidates);
  void step_beam_request(BeamRequest& br);
  // Ends a request: releases its sequences and queues its n final outputs in beam_outputs_ (the
  // hypotheses, or `status` for each when set: an abort, a timeout, a failure).
  void end_beam_request(RequestId id, std::optional<RequestStatus> status = std::nullopt, const std::string& error = {});
  void release_beam_sequence(RequestId seq);
  void flush_beam_outputs(StepReport& report);
  // An output of a scheduler sequence: a beam sequence's ends its request (its choices go to
  // beam_outputs_), any other goes to `outs`.
  void route(RequestOutput out, std::vector<EngineOutput>& outs, const std::string& error = {});

  const Model& model_;
  EngineConfig config_;
  Scheduler scheduler_;
  ModelRunner runner_;
  std::unique_ptr<DraftSource> draft_source_;  // null unless speculating
  std::vector<PendingChoice> pending_choices_;
  std::unordered_map<RequestId, int> choice_index_;  // choices i > 0 while live: id -> i
  RequestTrace request_trace_;  // request phases for --trace
  std::map<RequestId, BeamRequest> beam_requests_;               // live beam searches by request id
  std::unordered_map<RequestId, RequestId> beam_of_sequence_;    // live beam sequence -> request id
  std::vector<EngineOutput> beam_outputs_;  // final outputs of ended beam searches not reported yet
  std::deque<RequestId> queued_beams_;      // beam requests not started yet, in arrival order
  int64_t active_beam_seqs_ = 0, active_beam_blocks_ = 0;  // what the active ones may come to hold
  RequestId next_beam_sequence_ = kFirstBeamSequence;
};

}  // namespace lemma
