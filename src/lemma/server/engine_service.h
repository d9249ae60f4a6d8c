// EngineService: the real EngineClient — an Engine on its own thread. The server's I/O threads
// submit and cancel through a bounded, mutex-guarded inbox; the engine thread admits requests
// (n choices each, sharing their prompt), steps the engine while any request is live, and pushes each
// choice's tokens to its sink (never blocking: the sink is the server's bounded OutputBuffer).
// Every accepted choice ends with exactly one final delta: finished, cancelled, timed out, failed, or
// cancelled at shutdown. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "lemma/engine/engine.h"
#include "lemma/server/engine_client.h"

namespace lemma::server {

struct EngineServiceConfig {
  EngineConfig engine;
  std::vector<int32_t> end_of_generation_ids;  // end a choice (unless ignore_eos)
  size_t max_waiting_requests = 256;           // submit() refuses (429) when this many wait already
  uint64_t seed = 0;                           // seeds of requests without one derive from it; 0: random
};

class EngineService final : public EngineClient {
 public:
  // Starts the engine thread. Throws InvalidArgument for impossible engine settings.
  EngineService(const Model& model, EngineServiceConfig config);
  ~EngineService() override;  // shutdown()
  EngineService(const EngineService&) = delete;
  EngineService& operator=(const EngineService&) = delete;

  bool submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) override;
  void cancel(const std::string& request_id) override;
  EngineStats stats() const override;

  // Runs `task` on the engine thread between steps (KV handoffs, G24). Tasks run in the order given;
  // they must not block. Returns false (the task is dropped) once shutdown() has begun.
  bool run_on_engine_thread(std::function<void(Engine&)> task);

  // Refuses new requests, cancels every live one (each choice gets its final delta) and joins the
  // engine thread. Idempotent.
  void shutdown();

 private:
  struct Submission {
    CompletionRequest request;
    std::shared_ptr<CompletionSink> sink;
    double arrival = 0.0;
  };
  struct Call;

  void loop();
  double now() const;
  void admit(Submission& s);
  void cancel_call(const std::string& id);
  // Turns an output into its delta, queued until flush_deltas(): the stats are published first,
  // so a client that reads /metrics right after its final chunk never sees its blocks still used.
  void deliver(EngineOutput& out);
  void flush_deltas();
  void note_first_scheduled(const std::vector<RequestId>& ids);
  void publish_stats(int64_t batch_size, const moe::MoeStepStats* moe = nullptr);
  void fail_everything(const std::string& message);

  const Model& model_;
  EngineServiceConfig config_;
  Engine engine_;  // engine thread only
  std::chrono::steady_clock::time_point start_;

  // Inbox (any thread).
  mutable std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::deque<Submission> submissions_;
  std::vector<std::string> cancels_;
  std::vector<std::function<void(Engine&)>> tasks_;
  bool stopping_ = false;
  std::atomic<int64_t> num_waiting_{0};

  // Engine thread only.
  std::unordered_map<std::string, std::shared_ptr<Call>> calls_;
  std::unordered_map<RequestId, std::shared_ptr<Call>> choices_;  // each live choice's call
  std::vector<std::pair<std::shared_ptr<CompletionSink>, CompletionDelta>> pending_deltas_;
  RequestId next_id_ = 1;
  uint64_t seed_state_ = 0;

  mutable std::mutex stats_mu_;
  EngineStats stats_;

  std::thread thread_;
};

}  // namespace lemma::server
