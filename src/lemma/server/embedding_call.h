// EmbeddingCall: one /v1/embeddings request's inputs as pooling requests to the one engine (one
// engine request per input, ids "<call id>-<i>", max_tokens 1), their results read from their
// OutputBuffers, then the response: L2-normalised vectors in the request's encoding, or the first
// failure as an error. Socket-free; not thread-safe (one connection's strand; the buffers are the
// thread boundary).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemma/server/embeddings_request.h"
#include "lemma/server/engine_client.h"
#include "lemma/server/http_types.h"
#include "lemma/server/output_buffer.h"

namespace lemma {
struct LoraAdapter;
}

namespace lemma::server {

class EmbeddingCall {
 public:
  // `prompts`: each input's token ids (validated against the vocabulary and the context).
  EmbeddingCall(std::string id, std::string model, std::vector<std::vector<int32_t>> prompts, Pooling pooling,
                bool base64, std::shared_ptr<const LoraAdapter> lora);

  size_t size() const { return inputs_.size(); }
  CompletionRequest engine_request(size_t i) const;
  const std::shared_ptr<OutputBuffer>& buffer(size_t i) const { return inputs_[i].buffer; }
  // Reads what the engine delivered; true once every input has its final delta.
  bool poll();
  // The engine ids of inputs without a final delta (to cancel when the call ends early).
  std::vector<std::string> unfinished_ids() const;
  // Ends the call early with this error (timeout, shutdown, refused submission).
  void fail(int status, std::string message);
  // 200 with the list body once every input has its vector; else the failure.
  HttpResponse response() const;
  int64_t prompt_tokens() const;

 private:
  struct Input {
    std::vector<int32_t> prompt;
    std::shared_ptr<OutputBuffer> buffer;
    std::optional<std::vector<float>> vector;  // set on the final delta
  };
  std::string id_, model_;
  Pooling pooling_;
  bool base64_;
  std::shared_ptr<const LoraAdapter> lora_;
  std::vector<Input> inputs_;
  int error_status_ = 0;
  std::string error_;
};

}  // namespace lemma::server
