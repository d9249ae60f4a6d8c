#include "fake_engine.h"

namespace lemma::server::testing {

FakeEngine::~FakeEngine() { join_all(); }

bool FakeEngine::submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) {
  if (before_submit) before_submit();
  std::lock_guard lock(mu_);
  if (running_.load() >= capacity.load()) return false;
  auto live = std::make_shared<Live>();
  live_[request.request_id] = live;
  sinks_[request.request_id] = sink;
  requests_.push_back(request);
  running_.fetch_add(1);
  threads_.emplace_back([this, request = std::move(request), sink, live]() mutable { run(std::move(request), sink, live); });
  return true;
}

void FakeEngine::run(CompletionRequest request, std::shared_ptr<CompletionSink> sink, std::shared_ptr<Live> live) {
  std::vector<int64_t> produced(size_t(request.n), 0);
  std::vector<bool> done(size_t(request.n), false);
  size_t step = 0;
  int remaining = request.n;
  auto final_delta = [&](int index, RequestStatus reason, std::vector<int32_t> tokens) {
    CompletionDelta d;
    d.index = index;
    d.token_ids = std::move(tokens);
    if (emit_logprobs && request.sampling.logprobs) {
      for (int32_t t : d.token_ids) d.logprobs.push_back(SampleResult{.token = t, .logprob = -0.5f, .top = {{t, -0.5f}, {t + 1, -1.5f}}});
      for (auto& lp : d.logprobs) lp.top.resize(size_t(request.sampling.top_logprobs));
    }
    d.finish_reason = reason;
    if (reason == RequestStatus::kFinishedFailed) d.error = "boom";
    d.cached_prompt_tokens = cached_tokens;
    d.queue_seconds = 0.001;
    if (request.pooling != Pooling::kNone && (reason == RequestStatus::kFinishedLength || reason == RequestStatus::kFinishedStopped))
      d.embedding = fake_embedding(request.prompt_ids, request.pooling);
    sink->push(std::move(d));
    done[size_t(index)] = true;
    --remaining;
  };
  while (remaining > 0) {
    if (live->cancelled) {
      for (int i = 0; i < request.n; ++i) if (!done[size_t(i)]) final_delta(i, RequestStatus::kFinishedCancelled, {});
      break;
    }
    for (int i = 0; i < request.n; ++i) {
      if (done[size_t(i)]) continue;
      if (step >= script.size()) {
        std::vector<int32_t> tail;
        if (end_token >= 0) tail.push_back(end_token);
        final_delta(i, RequestStatus::kFinishedStopped, tail);
        continue;
      }
      if (fail_after_first_token && step >= 1) {
        final_delta(i, RequestStatus::kFinishedFailed, {});
        continue;
      }
      int32_t token = script[step];
      if (++produced[size_t(i)] >= request.max_tokens) {
        final_delta(i, RequestStatus::kFinishedLength, {token});
        continue;
      }
      CompletionDelta d;
      d.index = i;
      d.token_ids = {token};
      if (emit_logprobs && request.sampling.logprobs) {
        SampleResult lp{.token = token, .logprob = -0.25f};
        for (int k = 0; k < request.sampling.top_logprobs; ++k) lp.top.push_back({token + k, -0.25f - float(k)});
        d.logprobs.push_back(lp);
      }
      sink->push(std::move(d));
    }
    ++step;
    if (token_delay.count() > 0) std::this_thread::sleep_for(token_delay);
  }
  std::lock_guard lock(mu_);
  live_.erase(request.request_id);
  running_.fetch_sub(1);
}

void FakeEngine::cancel(const std::string& request_id) {
  std::lock_guard lock(mu_);
  ++cancels_[request_id];
  auto it = live_.find(request_id);
  if (it != live_.end()) it->second->cancelled = true;
}

EngineStats FakeEngine::stats() const {
  EngineStats s;
  s.requests_running = running_.load();
  s.kv_blocks_total = 64;
  s.batch_size_bucket_counts = {1, 2, 3};
  s.batch_size_sum = 6;
  s.batch_size_count = 3;
  if (moe_stats) {
    s.moe_expert_tokens.observe(kMoeExpertTokensBuckets, 3.0);
    s.moe_load_imbalance.observe(kMoeLoadImbalanceBuckets, 1.5);
  }
  return s;
}

int FakeEngine::cancel_count(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = cancels_.find(id);
  return it == cancels_.end() ? 0 : it->second;
}

int FakeEngine::total_cancels() const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& [id, c] : cancels_) n += c;
  return n;
}

std::vector<CompletionRequest> FakeEngine::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

std::shared_ptr<CompletionSink> FakeEngine::sink_of(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = sinks_.find(id);
  return it == sinks_.end() ? nullptr : it->second;
}

void FakeEngine::join_all() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

}  // namespace lemma::server::testing
