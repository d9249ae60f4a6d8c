// Engine: one serving step at a time — plan = scheduler.schedule(); out = runner.run(plan);
// scheduler.update(plan, out) — turning sampled tokens into per-request outputs. Also parallel
// sampling (n > 1): extra choices fork from their parent once its prompt is computed, sharing the
// prompt's KV blocks copy-on-write. A forward that throws fails only the requests of that step.
// Synchronous and single-threaded (EngineService runs it on its own thread); deterministic for a
// given sequence of calls, which the tests rely on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lemma/engine/request_trace.h"
#include "lemma/model/model.h"
#include "lemma/runtime/model_runner.h"
#include "lemma/sched/scheduler.h"

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
};

// New tokens (or the end) of one request after a step or an abort.
struct EngineOutput {
  RequestOutput output;  // output.logprobs: parallel to its new tokens when the request asked for logprobs
  std::string error;     // when output.status == kFinishedFailed
};

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

  // Queues a request. Throws InvalidArgument (nothing queued) like Scheduler::add_request, and for
  // prompt token ids outside the vocabulary or invalid sampling parameters.
  void add_request(RequestId id, std::vector<int32_t> prompt, RequestOptions options);
  // Queues another choice of `parent` (same prompt, its own options, e.g. another seed). It shares
  // the parent's prompt blocks once the parent has computed them, or runs as an ordinary request
  // when the parent has finished first. Throws InvalidArgument for an unknown parent or a duplicate id.
  void add_choice(RequestId parent, RequestId child, RequestOptions options);

  // Ends a live request (idempotent: nullopt when unknown or finished).
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
  void start_pending_choices();
  // Every finished request passes here (finish, abort, timeout, failed step): the runner drops its
  // state at once, so nothing of it outlives the call that ended it (ModelRunner::forget).
  void release(RequestId id);
  void fail_step(const StepPlan& plan, const std::string& message, StepReport& report);

  const Model& model_;
  EngineConfig config_;
  Scheduler scheduler_;
  ModelRunner runner_;
  std::vector<PendingChoice> pending_choices_;
  RequestTrace request_trace_;  // request phases for --trace
};

}  // namespace lemma
