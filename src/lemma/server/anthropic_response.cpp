#include "lemma/server/anthropic_response.h"

namespace lemma::server {

namespace {
ojson usage_object(const Usage& u) {
  return ojson{{"input_tokens", u.prompt_tokens},
               {"cache_creation_input_tokens", 0},
               {"cache_read_input_tokens", u.cached_tokens},
               {"output_tokens", u.completion_tokens}};
}
}  // namespace

std::string anthropic_stop_reason(const CallEnding& ending) {
  if (ending.finish_reason == "length") return "max_tokens";
  return ending.stop_sequence ? "stop_sequence" : "end_turn";
}

std::string anthropic_error_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string anthropic_error_body(int status, const std::string& message) {
  return dump_json(ojson{{"type", "error"}, {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}});
}

HttpResponse to_anthropic_error(HttpResponse response) {
  if (response.status < 400) return response;
  const auto j = nlohmann::json::parse(response.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("error") || !j.at("error").is_object()) return response;
  response.body = anthropic_error_body(response.status, j.at("error").value("message", ""));
  response.content_type = "application/json";
  return response;
}

ojson MessagesEncoder::message(const ojson& content, const CallEnding* ending, const Usage& usage) const {
  ojson m{{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", model_}, {"content", content}};
  m["stop_reason"] = ending ? ojson(anthropic_stop_reason(*ending)) : ojson(nullptr);
  m["stop_sequence"] = ending && ending->stop_sequence ? ojson(*ending->stop_sequence) : ojson(nullptr);
  m["usage"] = usage_object(usage);
  return m;
}

std::string MessagesEncoder::stream_start(const Usage& usage) {
  return sse_named_event("message_start", {{"type", "message_start"}, {"message", message(ojson::array(), nullptr, usage)}}) +
         sse_named_event("content_block_start",
                         {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}}) +
         sse_named_event("ping", {{"type", "ping"}});
}

std::string MessagesEncoder::stream_text(const std::string& text) {
  return sse_named_event("content_block_delta", {{"type", "content_block_delta"},
                                                 {"index", 0},
                                                 {"delta", {{"type", "text_delta"}, {"text", text}}}});
}

std::string MessagesEncoder::stream_finish(const std::string&, const CallEnding& ending) {
  ojson delta{{"stop_reason", anthropic_stop_reason(ending)},
              {"stop_sequence", ending.stop_sequence ? ojson(*ending.stop_sequence) : ojson(nullptr)}};
  return sse_named_event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}) +
         sse_named_event("message_delta", {{"type", "message_delta"}, {"delta", delta}, {"usage", usage_object(ending.usage)}}) +
         sse_named_event("message_stop", {{"type", "message_stop"}});
}

std::string MessagesEncoder::stream_error(int status, const std::string& message, const std::string&) {
  return "event: error\ndata: " + anthropic_error_body(status, message) + "\n\n";
}

std::string MessagesEncoder::body(const std::string& text, const CallEnding& ending) {
  ojson block{{"type", "text"}, {"text", text}};
  return dump_json(message(ojson::array({block}), &ending, ending.usage));
}

}  // namespace lemma::server
