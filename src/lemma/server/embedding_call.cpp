#include "lemma/server/embedding_call.h"

#include <fmt/format.h>

#include "lemma/server/api_error.h"
#include "lemma/server/embeddings_response.h"

namespace lemma::server {

EmbeddingCall::EmbeddingCall(std::string id, std::string model, std::vector<std::vector<int32_t>> prompts,
                             Pooling pooling, bool base64, std::shared_ptr<const LoraAdapter> lora)
    : id_(std::move(id)), model_(std::move(model)), pooling_(pooling), base64_(base64), lora_(std::move(lora)) {
  for (auto& p : prompts) inputs_.push_back({std::move(p), std::make_shared<OutputBuffer>(4), std::nullopt});
}

CompletionRequest EmbeddingCall::engine_request(size_t i) const {
  CompletionRequest r;
  r.request_id = fmt::format("{}-{}", id_, i);
  r.prompt_ids = inputs_[i].prompt;
  r.sampling.temperature = 0.0f;  // the one sampled token is discarded
  r.max_tokens = 1;
  r.pooling = pooling_;
  r.lora = lora_;
  return r;
}

bool EmbeddingCall::poll() {
  bool done = true;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    Input& in = inputs_[i];
    for (CompletionDelta& d : in.buffer->take()) {
      if (!d.finish_reason) continue;
      const RequestStatus s = *d.finish_reason;
      if (s == RequestStatus::kFinishedStopped || s == RequestStatus::kFinishedLength) {
        if (d.embedding.empty()) {
          fail(500, fmt::format("input {} could not be pooled (its state was lost to a swap preemption); retry", i));
        } else {
          normalize_l2(d.embedding);
          in.vector = std::move(d.embedding);
        }
      } else if (s == RequestStatus::kFinishedTimeout) {
        fail(504, d.error.empty() ? "the request timed out" : d.error);
      } else {
        fail(s == RequestStatus::kFinishedCancelled ? 503 : 500, d.error.empty() ? "the engine failed" : d.error);
      }
      if (!in.vector) in.vector.emplace();  // ended without one (the call has its error)
    }
    if (in.buffer->overflowed() && !in.vector) fail(500, "engine output overflowed");
    done = done && in.vector.has_value();
  }
  return done;
}

std::vector<std::string> EmbeddingCall::unfinished_ids() const {
  std::vector<std::string> ids;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!inputs_[i].vector) ids.push_back(fmt::format("{}-{}", id_, i));
  return ids;
}

void EmbeddingCall::fail(int status, std::string message) {
  if (error_status_ != 0) return;  // the first failure is the answer
  error_status_ = status;
  error_ = std::move(message);
}

int64_t EmbeddingCall::prompt_tokens() const {
  int64_t n = 0;
  for (const Input& in : inputs_) n += static_cast<int64_t>(in.prompt.size());
  return n;
}

HttpResponse EmbeddingCall::response() const {
  HttpResponse r;
  if (error_status_ != 0) {
    r.status = error_status_;
    r.body = error_body(error_status_, error_, "");
    return r;
  }
  std::vector<std::vector<float>> vectors;
  for (const Input& in : inputs_) vectors.push_back(in.vector.value_or(std::vector<float>{}));
  r.body = dump_json(embeddings_json(vectors, base64_, model_, prompt_tokens()));
  return r;
}

}  // namespace lemma::server
