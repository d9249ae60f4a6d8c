// Engine: one serving step at a time — plan = scheduler.schedule(); out = runner.run(plan);
// scheduler.update(plan, out) — turning sampled tokens into per-request outputs. Also parallel
// sampling (n > 1), the one layer that fans a request out into choices: extra choices fork from
// choice 0 once its prompt is computed, sharing the prompt's KV blocks copy-on-write, and each output
// says which choice it is. A forward that throws fails only the requests of that step.
// Synchronous and single-threaded (EngineService runs it on its own thread); deterministic for a
// given sequence of calls, which the tests rely on.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

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

// New tokens (or the end) of one request after a step or an abort.
struct EngineOutput {
  RequestOutput output;  // output.logprobs: parallel to its new tokens when the request asked for logprobs
  std::string error;     // when output.status == kFinishedFailed
  int choice = 0;        // which choice of its request (output.id - the request's id)
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
};

class Engine {
 public:
  // Throws InvalidArgument for impossible settings (from the scheduler, KV manager or runner).
  Engine(const Model& model, const EngineConfig& config);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request with `n` choices (parallel sampling). Choice i runs as id + i (the caller keeps
  // ids [id, id + n) for it) with seed choice_seed(seed, i) when the options carry a seed (else the
  // runner's default_seed ^ (id + i)); choices i > 0 share choice 0's prompt blocks once it has
  // computed them, or run as ordinary requests when it has finished first. Throws InvalidArgument
  // (nothing queued) like Scheduler::add_request, for n < 1, an id in [id, id + n) in use, prompt
  // token ids outside the vocabulary or invalid sampling parameters.
  void add_request(RequestId id, std::vector<int32_t> prompt, RequestOptions options, int n = 1);

  // Ends one live choice (idempotent: nullopt when unknown or finished).
  std::optional<EngineOutput> abort(RequestId id, RequestStatus status = RequestStatus::kFinishedCancelled);
  std::vector<EngineOutput> abort_expired(double now);

  StepReport step();

  bool has_unfinished_requests() const { return scheduler_.has_unfinished_requests() || !pending_choices_.empty(); }
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

  const Model& model_;
  EngineConfig config_;
  Scheduler scheduler_;
  ModelRunner runner_;
  std::unique_ptr<DraftSource> draft_source_;  // null unless speculating
  std::vector<PendingChoice> pending_choices_;
  std::unordered_map<RequestId, int> choice_index_;  // choices i > 0 while live: id -> i
  RequestTrace request_trace_;  // request phases for --trace
};

}  // namespace lemma
