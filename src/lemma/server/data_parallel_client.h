// DataParallelClient: D engine replicas behind one EngineClient (`lemma serve --data-parallel-size D`).
// Each replica is a whole engine with its own KV cache, prefix cache and scheduler; a PrefixRouter
// sends each request to the replica most likely to hold its prefix, then the least loaded one.
// Cancels follow the request to its replica; stats add up over the replicas and keep each replica's
// own figures for /metrics. Thread-safe (the replicas are).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "lemma/server/engine_client.h"
#include "lemma/server/prefix_router.h"

namespace lemma::server {

class DataParallelClient final : public EngineClient {
 public:
  // `replicas` must be non-empty; the router's replica count must match.
  DataParallelClient(std::vector<std::unique_ptr<EngineClient>> replicas, std::unique_ptr<PrefixRouter> router);
  ~DataParallelClient() override;

  bool submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) override;
  void cancel(const std::string& request_id) override;
  EngineStats stats() const override;

  EngineClient& replica(int index) { return *replicas_[static_cast<std::size_t>(index)]; }

 private:
  class RoutedSink;
  struct ReplicaCounters {
    std::atomic<int64_t> in_flight{0};
    std::atomic<int64_t> routed{0};
    std::atomic<int64_t> matched_tokens{0};
  };
  void finished(const std::string& request_id, int replica);

  std::vector<std::unique_ptr<EngineClient>> replicas_;
  std::unique_ptr<PrefixRouter> router_;
  std::vector<std::unique_ptr<ReplicaCounters>> counters_;
  std::mutex owners_mu_;
  std::unordered_map<std::string, int> owners_;  // live request id -> its replica
};

// Adds `from` into `into`: counters and gauges sum, histograms add bucket by bucket.
void add_engine_stats(EngineStats& into, const EngineStats& from);

}  // namespace lemma::server
