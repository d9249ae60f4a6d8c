#include "lemma/server/disaggregated_client.h"

#include <chrono>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/server/data_parallel_client.h"

namespace lemma::server {
namespace {

int64_t nanoseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

std::string prefill_id(const std::string& request_id) { return request_id + "/prefill"; }

}  // namespace

struct DisaggregatedClient::Pending {
  CompletionRequest request;
  std::shared_ptr<CompletionSink> sink;
  std::vector<uint64_t> extra_keys;
  int32_t decode_held_blocks = 0;  // leading prompt blocks the decode engine held when asked
  std::mutex mu;
  bool decoding = false;   // handed to the decode engine
  bool cancelled = false;
};

// The prefill request's output is dropped; its end starts the handoff (or the fallback).
class DisaggregatedClient::PrefillSink final : public CompletionSink {
 public:
  PrefillSink(DisaggregatedClient& client, std::shared_ptr<Pending> pending)
      : client_(client), pending_(std::move(pending)) {}
  void push(CompletionDelta delta) override {
    if (!delta.finish_reason) return;
    const RequestStatus end = *delta.finish_reason;
    if (end == RequestStatus::kFinishedStopped || end == RequestStatus::kFinishedLength) {
      client_.hand_over(pending_);
    } else {
      if (end != RequestStatus::kFinishedCancelled)
        log().warn("prefill engine: request {} ended ({}); the decode engine computes its prompt",
                   pending_->request.request_id, delta.error);
      client_.submit_to_decode(pending_);  // a cancel is noticed there
    }
  }

 private:
  DisaggregatedClient& client_;
  std::shared_ptr<Pending> pending_;
};

// Passes the decode engine's deltas on and forgets the request after its last choice.
class DisaggregatedClient::DecodeSink final : public CompletionSink {
 public:
  DecodeSink(DisaggregatedClient& client, std::shared_ptr<Pending> pending)
      : client_(client), pending_(std::move(pending)), choices_left_(std::max(1, pending_->request.n)) {}
  void push(CompletionDelta delta) override {
    const bool last = delta.finish_reason.has_value() && choices_left_.fetch_sub(1) == 1;
    pending_->sink->push(std::move(delta));
    if (last) client_.forget(pending_->request.request_id);
  }

 private:
  DisaggregatedClient& client_;
  std::shared_ptr<Pending> pending_;
  std::atomic<int> choices_left_;
};

DisaggregatedClient::DisaggregatedClient(std::unique_ptr<EngineService> prefill, std::unique_ptr<EngineService> decode,
                                         int block_size)
    : prefill_(std::move(prefill)), decode_(std::move(decode)), block_size_(block_size) {
  if (!prefill_ || !decode_) fail<InvalidArgument>("disaggregation needs a prefill and a decode engine");
  if (block_size_ < 1) fail<InvalidArgument>("KV block size must be >= 1, got {}", block_size_);
}

DisaggregatedClient::~DisaggregatedClient() {
  // The decode engine first: its requests end (cancelled); prefill endings then find it refusing and
  // end their requests themselves.
  decode_->shutdown();
  prefill_->shutdown();
}

bool DisaggregatedClient::submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) {
  auto p = std::make_shared<Pending>();
  p->request = std::move(request);
  p->sink = std::move(sink);
  if (p->request.lora != nullptr) p->extra_keys.push_back(lora_prefix_key(*p->request.lora));
  const std::string id = p->request.request_id;
  {
    std::lock_guard lock(mu_);
    if (pending_.count(id)) return false;
    pending_[id] = p;
  }
  // A prompt without a full block to carry (the last token is always computed by its engine), or a
  // streaming one (its K/V is no plain prefix): straight to the decode engine.
  const auto usable_blocks = static_cast<int64_t>(p->request.prompt_ids.size() - 1) / block_size_;
  // Embeddings too: a pooling request reads no prefix cache (mean pooling needs every prompt row).
  const bool direct = p->request.prompt_ids.empty() || usable_blocks < 1 || p->request.streaming.enabled() ||
                      p->request.pooling != Pooling::kNone;
  if (direct) {
    {
      std::lock_guard lock(p->mu);
      p->decoding = true;
    }
    if (decode_->submit(p->request, std::make_shared<DecodeSink>(*this, p))) return true;
    forget(id);
    return false;
  }
  // Ask the decode engine what it holds (on its thread), then prefill the rest.
  const bool queued = decode_->run_on_engine_thread([this, p](Engine& engine) {
    p->decode_held_blocks = engine.num_cached_prefix_blocks(p->request.prompt_ids, p->extra_keys);
    start_prefill(p);
  });
  if (!queued) forget(id);
  return queued;
}

void DisaggregatedClient::start_prefill(const std::shared_ptr<Pending>& p) {
  const auto usable_blocks = static_cast<int32_t>((p->request.prompt_ids.size() - 1) / static_cast<size_t>(block_size_));
  if (p->decode_held_blocks >= usable_blocks) {  // nothing to carry
    submit_to_decode(p);
    return;
  }
  CompletionRequest prefill;
  prefill.request_id = prefill_id(p->request.request_id);
  prefill.prompt_ids = p->request.prompt_ids;
  prefill.sampling.temperature = 0.0f;
  prefill.max_tokens = 1;
  prefill.ignore_eos = true;
  prefill.lora = p->request.lora;
  if (!prefill_->submit(std::move(prefill), std::make_shared<PrefillSink>(*this, p))) submit_to_decode(p);
}

void DisaggregatedClient::hand_over(const std::shared_ptr<Pending>& p) {
  const bool queued = prefill_->run_on_engine_thread([this, p](Engine& prefill_engine) {
    const auto start = std::chrono::steady_clock::now();
    auto handoff = std::make_shared<KvHandoff>(
        prefill_engine.export_prefix(p->request.prompt_ids, p->extra_keys, p->decode_held_blocks));
    int64_t elapsed = nanoseconds_since(start);
    const bool delivered = decode_->run_on_engine_thread([this, p, handoff, elapsed](Engine& decode_engine) {
      const auto import_start = std::chrono::steady_clock::now();
      const int32_t imported = decode_engine.import_prefix(*handoff);
      handoff_nanoseconds_.fetch_add(elapsed + nanoseconds_since(import_start));
      handoffs_.fetch_add(1);
      handoff_blocks_.fetch_add(imported);
      handoff_bytes_.fetch_add(static_cast<int64_t>(handoff->bytes()));
      submit_to_decode(p);
    });
    if (!delivered) finish_without_engine(p, RequestStatus::kFinishedCancelled, "");
  });
  if (!queued) submit_to_decode(p);
}

void DisaggregatedClient::submit_to_decode(const std::shared_ptr<Pending>& p) {
  {
    std::lock_guard lock(p->mu);
    p->decoding = true;
    if (p->cancelled) {
      finish_without_engine(p, RequestStatus::kFinishedCancelled, "");
      return;
    }
  }
  if (!decode_->submit(p->request, std::make_shared<DecodeSink>(*this, p))) {
    finish_without_engine(p, RequestStatus::kFinishedFailed, "the decode engine's queue is full or it is shutting down");
    return;
  }
  bool cancelled_meanwhile = false;
  {
    std::lock_guard lock(p->mu);
    cancelled_meanwhile = p->cancelled;
  }
  if (cancelled_meanwhile) decode_->cancel(p->request.request_id);  // the cancel may have come before it knew the id
}

void DisaggregatedClient::finish_without_engine(const std::shared_ptr<Pending>& p, RequestStatus status,
                                                const std::string& error) {
  for (int i = 0; i < std::max(1, p->request.n); ++i) {
    CompletionDelta delta;
    delta.index = i;
    delta.finish_reason = status;
    delta.error = error;
    p->sink->push(std::move(delta));
  }
  forget(p->request.request_id);
}

void DisaggregatedClient::forget(const std::string& request_id) {
  std::lock_guard lock(mu_);
  pending_.erase(request_id);
}

void DisaggregatedClient::cancel(const std::string& request_id) {
  std::shared_ptr<Pending> p;
  {
    std::lock_guard lock(mu_);
    if (auto it = pending_.find(request_id); it != pending_.end()) p = it->second;
  }
  if (!p) return;
  bool decoding = false;
  {
    std::lock_guard lock(p->mu);
    p->cancelled = true;
    decoding = p->decoding;
  }
  if (decoding) decode_->cancel(request_id);
  else prefill_->cancel(prefill_id(request_id));
}

EngineStats DisaggregatedClient::stats() const {
  EngineStats total = decode_->stats();
  add_engine_stats(total, prefill_->stats());
  total.kv_handoffs = handoffs_.load();
  total.kv_handoff_blocks = handoff_blocks_.load();
  total.kv_handoff_bytes = handoff_bytes_.load();
  total.kv_handoff_seconds = static_cast<double>(handoff_nanoseconds_.load()) * 1e-9;
  return total;
}

}  // namespace lemma::server
