#include "lemma/server/engine_service.h"

#include <algorithm>
#include <exception>
#include <random>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"

namespace lemma::server {

// One CompletionRequest: where its choices go and what the final deltas report.
struct EngineService::Call {
  std::string id;
  std::shared_ptr<CompletionSink> sink;
  std::vector<RequestId> choice_ids;  // index -> engine request id
  int remaining = 0;                  // choices without their final delta yet
  double arrival = 0.0;
  double queue_seconds = -1.0;        // arrival -> first scheduled
  bool logprobs = false;
};

namespace {

}  // namespace

EngineService::EngineService(const Model& model, EngineServiceConfig config)
    : model_(model),
      config_(std::move(config)),
      engine_(model, config_.engine),
      start_(std::chrono::steady_clock::now()),
      seed_state_(config_.seed != 0 ? config_.seed : std::random_device{}()) {
  stats_.kv_blocks_total = config_.engine.kv.num_device_blocks;
  stats_.batch_size_bucket_counts.assign(std::size(kBatchSizeBuckets), 0);
  thread_ = std::thread([this] { loop(); });
}

EngineService::~EngineService() { shutdown(); }

double EngineService::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool EngineService::submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) {
  {
    std::lock_guard lock(inbox_mu_);
    if (stopping_) return false;
    if (submissions_.size() + static_cast<size_t>(std::max<int64_t>(0, num_waiting_.load())) >=
        config_.max_waiting_requests)
      return false;
    submissions_.push_back({std::move(request), std::move(sink), now()});
  }
  inbox_cv_.notify_one();
  return true;
}

void EngineService::cancel(const std::string& request_id) {
  {
    std::lock_guard lock(inbox_mu_);
    cancels_.push_back(request_id);
  }
  inbox_cv_.notify_one();
}

bool EngineService::run_on_engine_thread(std::function<void(Engine&)> task) {
  {
    std::lock_guard lock(inbox_mu_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
  }
  inbox_cv_.notify_one();
  return true;
}

void EngineService::shutdown() {
  {
    std::lock_guard lock(inbox_mu_);
    stopping_ = true;
  }
  inbox_cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

EngineStats EngineService::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

void EngineService::loop() {
  for (;;) {
    std::deque<Submission> submissions;
    std::vector<std::string> cancels;
    std::vector<std::function<void(Engine&)>> tasks;
    bool stopping = false;
    {
      const bool busy = engine_.has_unfinished_requests();
      std::unique_lock lock(inbox_mu_);
      inbox_cv_.wait(lock, [&] {
        return busy || stopping_ || !submissions_.empty() || !cancels_.empty() || !tasks_.empty();
      });
      submissions.swap(submissions_);
      cancels.swap(cancels_);
      tasks.swap(tasks_);
      stopping = stopping_;
    }
    try {
      for (auto& task : tasks) task(engine_);
      for (auto& s : submissions) admit(s);
      for (const auto& id : cancels) cancel_call(id);
      if (stopping) {
        std::vector<std::string> live;
        for (const auto& [id, call] : calls_) live.push_back(id);
        for (const auto& id : live) cancel_call(id);
        publish_stats(0);
        flush_deltas();
        return;
      }
      for (auto& out : engine_.abort_expired(now())) deliver(out);
      int64_t batch = 0;
      moe::MoeStepStats moe;
      if (engine_.has_unfinished_requests()) {
        StepReport report = engine_.step();
        note_first_scheduled(report.first_scheduled);
        for (auto& out : report.outputs) deliver(out);
        batch = report.num_sequences;
        moe = std::move(report.moe);
      }
      publish_stats(batch, &moe);
      flush_deltas();
    } catch (const std::exception& e) {  // a bug, not bad input: fail what is live, keep serving
      log().error("engine: {}; failing every live request", e.what());
      fail_everything(e.what());
      publish_stats(0);
      flush_deltas();
    }
  }
}

void EngineService::admit(Submission& s) {
  const CompletionRequest& r = s.request;
  auto call = std::make_shared<Call>();
  call->id = r.request_id;
  call->sink = s.sink;
  call->arrival = s.arrival;
  call->logprobs = r.sampling.logprobs;
  const int n = std::max(1, r.n);
  RequestOptions o;
  o.sampling = r.sampling;
  // An unseeded request gets one from the service's seed; the engine derives its choices' seeds.
  o.sampling.seed = r.sampling.seed.value_or(choice_seed(seed_state_, next_id_));
  o.stop.max_tokens = r.max_tokens;
  o.stop.stop_token_ids = r.stop_token_ids;
  o.stop.ignore_eos = r.ignore_eos;
  if (!r.ignore_eos)
    o.stop.stop_token_ids.insert(o.stop.stop_token_ids.end(), config_.end_of_generation_ids.begin(),
                                 config_.end_of_generation_ids.end());
  o.arrival_time = s.arrival;
  o.streaming = r.streaming;
  o.pooling = r.pooling;
  o.lora = r.lora;
  // A backstop: the server ends a call at its own deadline first and cancels it here.
  if (r.timeout) o.deadline = s.arrival + std::chrono::duration<double>(*r.timeout).count() + 1.0;
  const RequestId first = next_id_;
  next_id_ += static_cast<RequestId>(n);  // the engine runs choice i as first + i
  try {
    engine_.add_request(first, r.prompt_ids, std::move(o), n);
  } catch (const std::exception& e) {  // nothing was queued
    for (int i = 0; i < n; ++i) {
      CompletionDelta d;
      d.index = i;
      d.finish_reason = RequestStatus::kFinishedFailed;
      d.error = e.what();
      s.sink->push(std::move(d));
    }
    return;
  }
  call->remaining = n;
  for (int i = 0; i < n; ++i) {
    call->choice_ids.push_back(first + static_cast<RequestId>(i));
    choices_[call->choice_ids.back()] = call;
  }
  calls_[call->id] = std::move(call);
}

void EngineService::cancel_call(const std::string& id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  const std::shared_ptr<Call> call = it->second;
  for (RequestId choice : call->choice_ids)
    if (auto out = engine_.abort(choice, RequestStatus::kFinishedCancelled)) deliver(*out);
}

void EngineService::note_first_scheduled(const std::vector<RequestId>& ids) {
  const double t = now();
  for (RequestId id : ids) {
    auto it = choices_.find(id);
    if (it != choices_.end() && it->second->queue_seconds < 0) it->second->queue_seconds = t - it->second->arrival;
  }
}

void EngineService::deliver(EngineOutput& out) {
  auto it = choices_.find(out.output.id);
  if (it == choices_.end()) return;
  const std::shared_ptr<Call> call = it->second;
  CompletionDelta d;
  d.index = out.choice;
  d.token_ids = std::move(out.output.new_token_ids);
  if (call->logprobs) {
    d.logprobs = std::move(out.output.logprobs);
    d.logprobs.resize(d.token_ids.size());  // parallel even if the engine had none (logprob 0, no top)
  }
  if (out.output.finished()) {
    d.finish_reason = out.output.status;
    if (out.output.status == RequestStatus::kFinishedTimeout) d.error = "the request timed out";
    else if (out.output.status == RequestStatus::kFinishedFailed) d.error = out.error.empty() ? "the engine failed" : out.error;
    d.cached_prompt_tokens = out.output.num_cached_tokens;
    d.embedding = std::move(out.output.embedding);
    if (call->queue_seconds < 0) call->queue_seconds = now() - call->arrival;
    d.queue_seconds = call->queue_seconds;
    choices_.erase(it);
    if (--call->remaining == 0) calls_.erase(call->id);
  }
  pending_deltas_.emplace_back(call->sink, std::move(d));
}

void EngineService::flush_deltas() {
  for (auto& [sink, delta] : pending_deltas_) sink->push(std::move(delta));
  pending_deltas_.clear();
}

void EngineService::fail_everything(const std::string& message) {
  std::vector<RequestId> live;
  for (const auto& [id, choice] : choices_) live.push_back(id);
  for (RequestId id : live) {
    auto out = engine_.abort(id, RequestStatus::kFinishedFailed);
    if (!out) {  // the engine lost it: report it anyway
      out = EngineOutput{};
      out->output.id = id;
      out->output.status = RequestStatus::kFinishedFailed;
    }
    out->error = message;
    deliver(*out);
  }
}

void EngineService::publish_stats(int64_t batch_size, const moe::MoeStepStats* moe) {
  const SchedulerStats s = engine_.scheduler().stats();
  num_waiting_.store(s.num_waiting);
  std::lock_guard lock(stats_mu_);
  stats_.requests_running = s.num_running;
  stats_.requests_waiting = s.num_waiting;
  stats_.kv_blocks_used = s.kv_blocks_used;
  stats_.kv_blocks_total = s.kv_blocks_total;
  stats_.prefix_cache_queries = static_cast<int64_t>(s.prefix_cache_queries);
  stats_.prefix_cache_hits = static_cast<int64_t>(s.prefix_cache_hits);
  stats_.prefix_cache_queried_tokens = static_cast<int64_t>(engine_.scheduler().kv().num_prefix_queried_tokens());
  stats_.prefix_cache_hit_tokens = static_cast<int64_t>(engine_.scheduler().kv().num_prefix_hit_tokens());
  stats_.preemptions = static_cast<int64_t>(s.num_preemptions);
  stats_.swap_outs = static_cast<int64_t>(s.num_swap_outs);
  stats_.swap_ins = static_cast<int64_t>(s.num_swap_ins);
  stats_.swap_fallbacks = static_cast<int64_t>(s.num_swap_fallbacks);
  stats_.spec_draft_tokens = static_cast<int64_t>(s.num_draft_tokens);
  stats_.spec_accepted_tokens = static_cast<int64_t>(s.num_accepted_draft_tokens);
  for (size_t k = 0; k < stats_.spec_acceptance_lengths.size(); ++k)
    stats_.spec_acceptance_lengths[k] = static_cast<int64_t>(s.num_verifications_by_accepted[k]);
  stats_.requests_swapped = s.num_swapped;
  stats_.host_blocks_used = s.host_blocks_used;
  stats_.kv_blocks_dropped = static_cast<int64_t>(s.num_blocks_dropped);
  if (batch_size > 0) {
    for (size_t b = 0; b < std::size(kBatchSizeBuckets); ++b)
      if (static_cast<double>(batch_size) <= kBatchSizeBuckets[b]) ++stats_.batch_size_bucket_counts[b];
    stats_.batch_size_sum += static_cast<double>(batch_size);
    ++stats_.batch_size_count;
  }
  if (moe && !moe->empty()) {
    for (int64_t tokens : moe->tokens_per_expert)
      stats_.moe_expert_tokens.observe(kMoeExpertTokensBuckets,
                                       static_cast<double>(tokens) / static_cast<double>(moe->num_moe_layers));
    stats_.moe_load_imbalance.observe(kMoeLoadImbalanceBuckets, moe->max_load_imbalance);
  }
}

}  // namespace lemma::server
