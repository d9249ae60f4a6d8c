// DisaggregatedClient: prefill and decode on separate engines (`lemma serve --disaggregate-prefill`,
// G24). A request's prompt is first computed by the prefill engine (a one-token greedy request whose
// only purpose is its K/V); the prompt's full blocks that the decode engine does not already hold
// are then handed over (KvHandoff) and filed in the decode engine's prefix cache, and the request
// itself runs on the decode engine as an ordinary prefix hit. Outputs are those of one engine; a
// long prompt never stalls the decode engine's running requests. If the prefill engine refuses or
// fails, the decode engine computes the prompt itself. Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "lemma/server/engine_client.h"
#include "lemma/server/engine_service.h"

namespace lemma::server {

class DisaggregatedClient final : public EngineClient {
 public:
  // `block_size`: the engines' KV block size (both must use the same model, block size and KV dtype).
  DisaggregatedClient(std::unique_ptr<EngineService> prefill, std::unique_ptr<EngineService> decode, int block_size);
  ~DisaggregatedClient() override;

  bool submit(CompletionRequest request, std::shared_ptr<CompletionSink> sink) override;
  void cancel(const std::string& request_id) override;
  EngineStats stats() const override;

 private:
  struct Pending;
  class PrefillSink;
  class DecodeSink;
  void start_prefill(const std::shared_ptr<Pending>& p);
  void hand_over(const std::shared_ptr<Pending>& p);
  void submit_to_decode(const std::shared_ptr<Pending>& p);
  void finish_without_engine(const std::shared_ptr<Pending>& p, RequestStatus status, const std::string& error);
  void forget(const std::string& request_id);

  std::unique_ptr<EngineService> prefill_;
  std::unique_ptr<EngineService> decode_;
  const int block_size_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Pending>> pending_;  // live requests by id
  // Handoff figures (/metrics): count, blocks, bytes, and seconds spent exporting + importing.
  std::atomic<int64_t> handoffs_{0}, handoff_blocks_{0}, handoff_bytes_{0};
  std::atomic<int64_t> handoff_nanoseconds_{0};
};

}  // namespace lemma::server
