#include "lemma/server/data_parallel_client.h"

#include <algorithm>

#include "lemma/base/error.h"
#include "lemma/model/lora/lora_adapter.h"

namespace lemma::server {

// Passes deltas through and tells the client when the request's last choice has ended.
class DataParallelClient::RoutedSink final : public CompletionSink {
 public:
  RoutedSink(DataParallelClient& client, std::shared_ptr<CompletionSink> inner, std::string request_id, int replica,
             int num_choices)
      : client_(client), inner_(std::move(inner)), request_id_(std::move(request_id)), replica_(replica),
        choices_left_(num_choices) {}

  void push(CompletionDelta delta) override {
    const bool last = delta.finish_reason.has_value() && choices_left_.fetch_sub(1) == 1;
    inner_->push(std::move(delta));
    if (last) client_.finished(request_id_, replica_);
  }

 private:
  DataParallelClient& client_;
  std::shared_ptr<CompletionSink> inner_;
  const std::string request_id_;
  const int replica_;
  std::atomic<int> choices_left_;
};

DataParallelClient::DataParallelClient(std::vector<std::unique_ptr<EngineClient>> replicas,
                                       std::unique_ptr<PrefixRouter> router)
    : replicas_(std::move(replicas)), router_(std::move(router)) {
  if (replicas_.empty()) fail<InvalidArgument>("data parallelism needs at least one replica");
  if (router_ == nullptr || router_->num_replicas() != static_cast<int>(replicas_.size())) {
    fail<InvalidArgument>("the router must route over the {} replicas", replicas_.size());
  }
  for (std::size_t i = 0; i < replicas_.size(); ++i) counters_.push_back(std::make_unique<ReplicaCounters>());
}

DataParallelClient::~DataParallelClient() = default;

bool DataParallelClient::submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) {
  std::vector<int64_t> in_flight;
  for (const auto& c : counters_) in_flight.push_back(c->in_flight.load());
  // The adapter's identity salts the hashes, as in the engines' prefix caches: a hit never crosses adapters.
  std::vector<uint64_t> extra_keys;
  if (request.lora != nullptr) extra_keys.push_back(lora_prefix_key(*request.lora));
  const RouteChoice choice = router_->route(request.prompt_ids, extra_keys, in_flight);

  // The chosen replica first; if its queue is full, the others from the least loaded.
  std::vector<int> order{choice.replica};
  for (int r = 0; r < static_cast<int>(replicas_.size()); ++r)
    if (r != choice.replica) order.push_back(r);
  std::stable_sort(order.begin() + 1, order.end(), [&](int a, int b) { return in_flight[a] < in_flight[b]; });

  const std::string id = request.request_id;
  const int num_choices = std::max(1, request.n);
  for (int replica : order) {
    {
      std::lock_guard lock(owners_mu_);
      owners_[id] = replica;
    }
    ReplicaCounters& counters = *counters_[static_cast<std::size_t>(replica)];
    counters.in_flight.fetch_add(1);
    auto routed = std::make_shared<RoutedSink>(*this, sink, id, replica, num_choices);
    if (replicas_[static_cast<std::size_t>(replica)]->submit(request, routed)) {
      counters.routed.fetch_add(1);
      if (replica == choice.replica) counters.matched_tokens.fetch_add(choice.matched_tokens);
      return true;
    }
    counters.in_flight.fetch_sub(1);
  }
  std::lock_guard lock(owners_mu_);
  owners_.erase(id);
  return false;
}

void DataParallelClient::finished(const std::string& request_id, int replica) {
  counters_[static_cast<std::size_t>(replica)]->in_flight.fetch_sub(1);
  std::lock_guard lock(owners_mu_);
  if (auto it = owners_.find(request_id); it != owners_.end() && it->second == replica) owners_.erase(it);
}

void DataParallelClient::cancel(const std::string& request_id) {
  int replica = -1;
  {
    std::lock_guard lock(owners_mu_);
    if (auto it = owners_.find(request_id); it != owners_.end()) replica = it->second;
  }
  if (replica >= 0) replicas_[static_cast<std::size_t>(replica)]->cancel(request_id);
}

EngineStats DataParallelClient::stats() const {
  EngineStats total;
  for (std::size_t r = 0; r < replicas_.size(); ++r) {
    const EngineStats one = replicas_[r]->stats();
    add_engine_stats(total, one);
    ReplicaStats replica;
    replica.requests_running = one.requests_running;
    replica.requests_waiting = one.requests_waiting;
    replica.kv_blocks_used = one.kv_blocks_used;
    replica.prefix_cache_queries = one.prefix_cache_queries;
    replica.prefix_cache_hits = one.prefix_cache_hits;
    replica.routed_requests = counters_[r]->routed.load();
    replica.routed_matched_tokens = counters_[r]->matched_tokens.load();
    total.replicas.push_back(replica);
  }
  return total;
}

namespace {

void add_buckets(std::vector<int64_t>& into, const std::vector<int64_t>& from) {
  if (into.size() < from.size()) into.resize(from.size(), into.empty() ? 0 : into.back());
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += i < from.size() ? from[i] : (from.empty() ? 0 : from.back());
}

void add_histogram(CumulativeHistogram& into, const CumulativeHistogram& from) {
  add_buckets(into.bucket_counts, from.bucket_counts);
  into.sum += from.sum;
  into.count += from.count;
}

}  // namespace

void add_engine_stats(EngineStats& into, const EngineStats& from) {
  into.requests_running += from.requests_running;
  into.requests_waiting += from.requests_waiting;
  into.kv_blocks_used += from.kv_blocks_used;
  into.kv_blocks_total += from.kv_blocks_total;
  into.prefix_cache_queries += from.prefix_cache_queries;
  into.prefix_cache_hits += from.prefix_cache_hits;
  into.prefix_cache_queried_tokens += from.prefix_cache_queried_tokens;
  into.prefix_cache_hit_tokens += from.prefix_cache_hit_tokens;
  into.preemptions += from.preemptions;
  into.swap_outs += from.swap_outs;
  into.swap_ins += from.swap_ins;
  into.swap_fallbacks += from.swap_fallbacks;
  into.spec_draft_tokens += from.spec_draft_tokens;
  into.spec_accepted_tokens += from.spec_accepted_tokens;
  for (std::size_t k = 0; k < into.spec_acceptance_lengths.size(); ++k)
    into.spec_acceptance_lengths[k] += from.spec_acceptance_lengths[k];
  into.requests_swapped += from.requests_swapped;
  into.host_blocks_used += from.host_blocks_used;
  into.kv_blocks_dropped += from.kv_blocks_dropped;
  add_buckets(into.batch_size_bucket_counts, from.batch_size_bucket_counts);
  into.batch_size_sum += from.batch_size_sum;
  into.batch_size_count += from.batch_size_count;
  into.kv_handoffs += from.kv_handoffs;
  into.kv_handoff_blocks += from.kv_handoff_blocks;
  into.kv_handoff_bytes += from.kv_handoff_bytes;
  into.kv_handoff_seconds += from.kv_handoff_seconds;
  add_histogram(into.moe_expert_tokens, from.moe_expert_tokens);
  add_histogram(into.moe_load_imbalance, from.moe_load_imbalance);
}

}  // namespace lemma::server
