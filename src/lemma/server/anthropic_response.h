// Anthropic Messages API output: the message object, the streaming events (message_start,
// content_block_start, ping, content_block_delta, content_block_stop, message_delta, message_stop),
// stop_reason (end_turn, max_tokens, stop_sequence) and errors in Anthropic's shape
// `{"type": "error", "error": {"type", "message"}}`. Pure functions and a per-call encoder.
#pragma once

#include <string>

#include "lemma/server/call_encoder.h"
#include "lemma/server/http_types.h"

namespace lemma::server {

// "end_turn", "max_tokens" or "stop_sequence".
std::string anthropic_stop_reason(const CallEnding& ending);
// Anthropic's error type for an HTTP status (invalid_request_error, authentication_error, ...).
std::string anthropic_error_type(int status);
std::string anthropic_error_body(int status, const std::string& message);
// An OpenAI-shaped error response (api_error.h) in Anthropic's shape; other responses unchanged.
HttpResponse to_anthropic_error(HttpResponse response);

class MessagesEncoder final : public CallEncoder {
 public:
  MessagesEncoder(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}
  std::string stream_start(const Usage& usage) override;
  std::string stream_text(const std::string& text) override;
  std::string stream_finish(const std::string& text, const CallEnding& ending) override;
  std::string stream_error(int status, const std::string& message, const std::string& code) override;
  std::string body(const std::string& text, const CallEnding& ending) override;

 private:
  ojson message(const ojson& content, const CallEnding* ending, const Usage& usage) const;
  std::string id_, model_;
};

}  // namespace lemma::server
