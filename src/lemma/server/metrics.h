// Metrics: the server's Prometheus counters and histograms (lemma_* names, low-cardinality
// labels only: endpoint, status class, finish reason) and the text exposition format for
// GET /metrics, merged with the engine's EngineStats. Thread-safe (one mutex; cheap updates).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lemma/server/engine_client.h"

namespace lemma::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends `name_bucket`, `name_sum`, `name_count` lines (the caller writes HELP/TYPE).
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket (not cumulative); last = +Inf
  double sum_ = 0.0;
  int64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  // One finished HTTP exchange; `endpoint` is the route name ("completions", "other", ...).
  void record_http(const std::string& endpoint, int status);
  // One finished generation request: reason is stop|length|cancelled|timeout|error|overflow.
  void record_finished(const std::string& reason, int64_t prompt_tokens, int64_t generation_tokens);
  void observe_queue_time(double seconds);
  void observe_ttft(double seconds);
  void observe_itl(double seconds);
  void observe_tpot(double seconds);
  void observe_e2e(double seconds);
  void record_rejected();  // queue full
  // Connections: refused at accept (reason: max_connections | fd_limit), closed by the server
  // before a request completed (reason: header_timeout | idle_evicted), and the open count.
  void record_connection_refused(const std::string& reason);
  void record_connection_closed(const std::string& reason);
  void set_open_connections(int64_t n);
  // The whole exposition text, with the engine's gauges and counters.
  std::string render(const EngineStats& engine) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, int64_t> http_;  // (endpoint, status class) -> count
  std::map<std::string, int64_t> finished_;
  std::map<std::string, int64_t> connections_refused_, connections_closed_;
  int64_t open_connections_ = 0;
  int64_t prompt_tokens_ = 0, generation_tokens_ = 0, rejected_ = 0;
  Histogram queue_time_, ttft_, itl_, tpot_, e2e_;
};

}  // namespace lemma::server
