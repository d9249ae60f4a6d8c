#include "lemma/server/metrics.h"

#include <fmt/format.h>

#include <initializer_list>
#include <span>

namespace lemma::server {

namespace {
const std::vector<double> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
                                             0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLongBuckets = {0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0, 300.0};

std::string fmt_bound(double b) { return fmt::format("{}", b); }

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}
}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, fmt_bound(bounds_[i]), cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

Metrics::Metrics()
    : queue_time_(kLongBuckets), ttft_(kLatencyBuckets), itl_(kLatencyBuckets), tpot_(kLatencyBuckets),
      e2e_(kLongBuckets) {}

void Metrics::record_http(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  ++http_[{endpoint, fmt::format("{}xx", status / 100)}];
}

void Metrics::record_finished(const std::string& reason, int64_t prompt_tokens, int64_t generation_tokens) {
  std::lock_guard lock(mu_);
  ++finished_[reason];
  prompt_tokens_ += prompt_tokens;
  generation_tokens_ += generation_tokens;
}

void Metrics::observe_queue_time(double s) { std::lock_guard lock(mu_); queue_time_.observe(s); }
void Metrics::observe_ttft(double s) { std::lock_guard lock(mu_); ttft_.observe(s); }
void Metrics::observe_itl(double s) { std::lock_guard lock(mu_); itl_.observe(s); }
void Metrics::observe_tpot(double s) { std::lock_guard lock(mu_); tpot_.observe(s); }
void Metrics::observe_e2e(double s) { std::lock_guard lock(mu_); e2e_.observe(s); }
void Metrics::record_rejected() { std::lock_guard lock(mu_); ++rejected_; }
void Metrics::record_connection_refused(const std::string& reason) { std::lock_guard lock(mu_); ++connections_refused_[reason]; }
void Metrics::record_connection_closed(const std::string& reason) { std::lock_guard lock(mu_); ++connections_closed_[reason]; }
void Metrics::set_open_connections(int64_t n) { std::lock_guard lock(mu_); open_connections_ = n; }

std::string Metrics::render(const EngineStats& engine) const {
  std::string out;
  auto gauge = [&](const char* name, const char* help, int64_t v) {
    header(out, name, "gauge", help);
    out += fmt::format("{} {}\n", name, v);
  };
  auto counter = [&](const char* name, const char* help, int64_t v) {
    header(out, name, "counter", help);
    out += fmt::format("{} {}\n", name, v);
  };
  gauge("lemma_requests_running", "Requests the engine is running.", engine.requests_running);
  gauge("lemma_requests_waiting", "Requests waiting in the engine queue.", engine.requests_waiting);
  gauge("lemma_kv_blocks_used", "KV-cache blocks in use.", engine.kv_blocks_used);
  // The pool's size is fixed at start (so never decreases); typed counter because promtool's lint
  // refuses a `_total` name on any other type, and the name is the one the serving issue asks for.
  counter("lemma_kv_blocks_total", "KV-cache blocks in the pool (fixed at start).", engine.kv_blocks_total);
  counter("lemma_prefix_cache_queries_total", "Prefix-cache block lookups.", engine.prefix_cache_queries);
  counter("lemma_prefix_cache_hits_total", "Prefix-cache block hits.", engine.prefix_cache_hits);
  counter("lemma_prefix_cache_queried_tokens_total", "Prompt tokens looked up in the prefix cache.",
          engine.prefix_cache_queried_tokens);
  counter("lemma_prefix_cache_hit_tokens_total", "Prompt tokens served from prefix-cached blocks.",
          engine.prefix_cache_hit_tokens);
  counter("lemma_preemptions_total", "Requests preempted by the scheduler.", engine.preemptions);
  counter("lemma_swap_outs_total", "Preempted requests whose KV blocks moved to the host tier.", engine.swap_outs);
  counter("lemma_swap_ins_total", "Swapped requests whose KV blocks moved back from the host tier.", engine.swap_ins);
  counter("lemma_swap_fallbacks_total", "Swap preemptions recomputed instead because the host tier had no room.",
          engine.swap_fallbacks);
  counter("lemma_spec_draft_tokens_total", "Speculative draft tokens verified.", engine.spec_draft_tokens);
  counter("lemma_spec_accepted_tokens_total", "Speculative draft tokens confirmed by the target model.",
          engine.spec_accepted_tokens);
  {  // drafts confirmed per verification, as a histogram over whole numbers
    header(out, "lemma_spec_acceptance_length", "histogram", "Drafts the target model confirmed per verification.");
    int64_t cumulative = 0, sum = 0;
    for (size_t k = 0; k < engine.spec_acceptance_lengths.size(); ++k) {
      cumulative += engine.spec_acceptance_lengths[k];
      sum += static_cast<int64_t>(k) * engine.spec_acceptance_lengths[k];
      if (k == 0 || k == 1 || k == 2 || k == 4 || k == 8 || k == 16)
        out += fmt::format("lemma_spec_acceptance_length_bucket{{le=\"{}\"}} {}\n", k, cumulative);
    }
    out += fmt::format("lemma_spec_acceptance_length_bucket{{le=\"+Inf\"}} {}\n", cumulative);
    out += fmt::format("lemma_spec_acceptance_length_sum {}\nlemma_spec_acceptance_length_count {}\n", sum, cumulative);
  }
  gauge("lemma_requests_swapped", "Preempted requests whose KV blocks are in the host tier.", engine.requests_swapped);
  gauge("lemma_kv_host_blocks_used", "Host-tier (swap) KV blocks in use.", engine.host_blocks_used);
  counter("lemma_kv_blocks_dropped_total", "KV blocks freed because they fell wholly before the sliding window.",
          engine.kv_blocks_dropped);

  std::lock_guard lock(mu_);
  header(out, "lemma_http_requests_total", "counter", "HTTP requests by endpoint and status class.");
  for (const auto& [key, v] : http_) {
    out += fmt::format("lemma_http_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, v);
  }
  header(out, "lemma_requests_finished_total", "counter", "Generation requests by terminal state.");
  for (const char* reason : {"stop", "length", "cancelled", "timeout", "error", "overflow"}) {
    auto it = finished_.find(reason);
    out += fmt::format("lemma_requests_finished_total{{reason=\"{}\"}} {}\n", reason, it == finished_.end() ? 0 : it->second);
  }
  counter("lemma_requests_rejected_total", "Requests refused because the engine queue was full.", rejected_);
  gauge("lemma_http_connections_open", "Client connections open now.", open_connections_);
  auto labelled = [&](const char* name, const char* help, const std::map<std::string, int64_t>& counts,
                      std::initializer_list<const char*> reasons) {
    header(out, name, "counter", help);
    for (const char* reason : reasons) {
      auto it = counts.find(reason);
      out += fmt::format("{}{{reason=\"{}\"}} {}\n", name, reason, it == counts.end() ? 0 : it->second);
    }
  };
  labelled("lemma_http_connections_refused_total", "Connections refused at accept, by reason.", connections_refused_,
           {"max_connections", "fd_limit"});
  labelled("lemma_http_connections_closed_early_total",
           "Connections the server closed before a complete request, by reason.", connections_closed_,
           {"header_timeout", "idle_evicted"});
  counter("lemma_prompt_tokens_total", "Prompt tokens of finished requests.", prompt_tokens_);
  counter("lemma_generation_tokens_total", "Generated tokens of finished requests.", generation_tokens_);
  auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    header(out, name, "histogram", help);
    h.render(out, name);
  };
  histogram("lemma_queue_time_seconds", "Time from engine arrival to first scheduling.", queue_time_);
  histogram("lemma_time_to_first_token_seconds", "Time from request arrival to the first token.", ttft_);
  histogram("lemma_time_per_output_token_seconds", "Mean time per output token after the first, per request.", tpot_);
  histogram("lemma_inter_token_latency_seconds", "Time between successive token deliveries.", itl_);
  histogram("lemma_e2e_request_latency_seconds", "Time from request arrival to its terminal state.", e2e_);
  header(out, "lemma_batch_size", "histogram", "Sequences per engine step.");
  std::vector<int64_t> buckets = engine.batch_size_bucket_counts;
  buckets.resize(std::size(kBatchSizeBuckets), buckets.empty() ? 0 : buckets.back());
  for (size_t i = 0; i < buckets.size(); ++i) {
    out += fmt::format("lemma_batch_size_bucket{{le=\"{}\"}} {}\n", fmt_bound(kBatchSizeBuckets[i]), buckets[i]);
  }
  out += fmt::format("lemma_batch_size_bucket{{le=\"+Inf\"}} {}\nlemma_batch_size_sum {}\nlemma_batch_size_count {}\n",
                     engine.batch_size_count, engine.batch_size_sum, engine.batch_size_count);
  // MoE models only (G27): one observation per expert per step, one imbalance per step.
  auto engine_histogram = [&](const char* name, const char* help, std::span<const double> bounds,
                              const CumulativeHistogram& h) {
    if (h.count == 0) return;
    header(out, name, "histogram", help);
    for (size_t i = 0; i < bounds.size(); ++i)
      out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, fmt_bound(bounds[i]), i < h.bucket_counts.size() ? h.bucket_counts[i] : 0);
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, h.count, name, h.sum, name, h.count);
  };
  engine_histogram("lemma_moe_expert_tokens", "Tokens routed to each expert per step (mean over the MoE layers).",
                   kMoeExpertTokensBuckets, engine.moe_expert_tokens);
  engine_histogram("lemma_moe_load_imbalance",
                   "Per step, the busiest expert's tokens over the mean per expert (worst MoE layer).",
                   kMoeLoadImbalanceBuckets, engine.moe_load_imbalance);
  if (engine.kv_handoffs > 0) {  // prefill/decode disaggregation (G24)
    counter("lemma_kv_handoffs_total", "Prompts whose KV blocks the prefill engine handed to the decode engine.",
            engine.kv_handoffs);
    counter("lemma_kv_handoff_blocks_total", "KV blocks handed from the prefill engine to the decode engine.",
            engine.kv_handoff_blocks);
    counter("lemma_kv_handoff_bytes_total", "KV bytes handed from the prefill engine to the decode engine.",
            engine.kv_handoff_bytes);
    header(out, "lemma_kv_handoff_seconds_total", "counter", "Seconds spent exporting and importing handed-over KV blocks.");
    out += fmt::format("lemma_kv_handoff_seconds_total {}\n", engine.kv_handoff_seconds);
  }
  if (!engine.replicas.empty()) {  // data parallelism: one series per replica
    auto per_replica = [&](const char* name, const char* type, const char* help, auto field) {
      header(out, name, type, help);
      for (size_t r = 0; r < engine.replicas.size(); ++r)
        out += fmt::format("{}{{replica=\"{}\"}} {}\n", name, r, engine.replicas[r].*field);
    };
    per_replica("lemma_replica_requests_running", "gauge", "Requests a data-parallel replica is running.",
                &ReplicaStats::requests_running);
    per_replica("lemma_replica_requests_waiting", "gauge", "Requests waiting in a data-parallel replica's queue.",
                &ReplicaStats::requests_waiting);
    per_replica("lemma_replica_kv_blocks_used", "gauge", "KV-cache blocks a data-parallel replica uses.",
                &ReplicaStats::kv_blocks_used);
    per_replica("lemma_replica_prefix_cache_queries_total", "counter", "A replica's prefix-cache block lookups.",
                &ReplicaStats::prefix_cache_queries);
    per_replica("lemma_replica_prefix_cache_hits_total", "counter", "A replica's prefix-cache block hits.",
                &ReplicaStats::prefix_cache_hits);
    per_replica("lemma_replica_routed_requests_total", "counter", "Requests the router sent to a replica.",
                &ReplicaStats::routed_requests);
    per_replica("lemma_replica_routed_prefix_tokens_total", "counter",
                "Prompt tokens the router expected the chosen replica to hold in its prefix cache.",
                &ReplicaStats::routed_matched_tokens);
  }
  return out;
}

}  // namespace lemma::server
