// FakeEngine: a deterministic EngineClient for server tests. Each accepted request gets a thread
// that replays a fixed token script (one token per delta, optional delay) for every choice and
// honours cancel(). Records requests and cancel calls. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "lemma/server/engine_client.h"

namespace lemma::server::testing {

class FakeEngine final : public EngineClient {
 public:
  ~FakeEngine() override;
  // The tokens every choice produces, in order; when the script ends before max_tokens the choice
  // finishes with kStop (after pushing `end_token` when it is >= 0).
  std::vector<int32_t> script;
  int32_t end_token = -1;
  std::chrono::microseconds token_delay{0};
  std::atomic<int> capacity{1000};  // accepted requests that may be live at once
  bool emit_logprobs = true;
  int64_t cached_tokens = 3;
  std::atomic<bool> fail_after_first_token{false};  // then end every choice with kError "boom"
  std::function<void()> before_submit;               // runs first in submit(), on the caller's thread
  bool moe_stats = false;  // stats() as a MoE model's (the MoE histograms observed once)
  // A pooling request's vector (unnormalised): {prompt length, first id, last id, 1 for mean else 0}.
  static std::vector<float> fake_embedding(const std::vector<int32_t>& prompt, Pooling pooling) {
    return {float(prompt.size()), float(prompt.front()), float(prompt.back()), pooling == Pooling::kMean ? 1.0f : 0.0f};
  }

  bool submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) override;
  void cancel(const std::string& request_id) override;
  EngineStats stats() const override;

  int cancel_count(const std::string& request_id) const;
  int total_cancels() const;
  std::vector<CompletionRequest> requests() const;
  std::shared_ptr<CompletionSink> sink_of(const std::string& request_id) const;
  // Waits until every request thread has finished.
  void join_all();

 private:
  struct Live {
    std::atomic<bool> cancelled{false};
  };
  void run(CompletionRequest request, std::shared_ptr<CompletionSink> sink, std::shared_ptr<Live> live);

  mutable std::mutex mu_;
  std::vector<CompletionRequest> requests_;
  std::map<std::string, std::shared_ptr<Live>> live_;
  std::map<std::string, std::shared_ptr<CompletionSink>> sinks_;
  std::map<std::string, int> cancels_;
  std::vector<std::thread> threads_;
  std::atomic<int> running_{0};
};

}  // namespace lemma::server::testing
