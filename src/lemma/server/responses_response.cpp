#include "lemma/server/responses_response.h"

namespace lemma::server {

namespace {
ojson usage_object(const Usage& u) {
  return ojson{{"input_tokens", u.prompt_tokens},
               {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
               {"output_tokens", u.completion_tokens},
               {"output_tokens_details", {{"reasoning_tokens", 0}}},
               {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

ojson opt(const std::optional<std::string>& v) { return v ? ojson(*v) : ojson(nullptr); }

ojson text_part(const std::string& text) {
  return ojson{{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}};
}

bool is_incomplete(const CallEnding& ending) { return ending.finish_reason == "length"; }

ojson message_item(const ResponseEcho& echo, const std::string& status, ojson content) {
  return ojson{{"id", echo.item_id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}
}  // namespace

ResponseEcho response_echo(const ParsedResponseRequest& request, std::string id, std::string model, int64_t created_at) {
  ResponseEcho e;
  e.item_id = "msg_" + id.substr(id.find('_') + 1);
  e.id = std::move(id);
  e.model = std::move(model);
  e.created_at = created_at;
  e.instructions = request.instructions;
  e.previous_response_id = request.previous_response_id;
  if (!request.completion.user.empty()) e.user = request.completion.user;
  e.max_output_tokens = request.max_output_tokens;
  e.temperature = request.completion.sampling.temperature;
  e.top_p = request.completion.sampling.top_p;
  e.store = request.store;
  e.metadata = request.metadata;
  return e;
}

ojson response_object(const ResponseEcho& echo, const std::optional<std::string>& output_text, const CallEnding* ending) {
  const bool incomplete = ending && is_incomplete(*ending);
  ojson r{{"id", echo.id}, {"object", "response"}, {"created_at", echo.created_at}};
  r["status"] = !ending ? "in_progress" : incomplete ? "incomplete" : "completed";
  r["error"] = nullptr;
  r["incomplete_details"] = incomplete ? ojson{{"reason", "max_output_tokens"}} : ojson(nullptr);
  r["instructions"] = opt(echo.instructions);
  r["max_output_tokens"] = echo.max_output_tokens ? ojson(*echo.max_output_tokens) : ojson(nullptr);
  r["model"] = echo.model;
  r["output"] = ojson::array();
  if (output_text && ending) {
    r["output"].push_back(message_item(echo, incomplete ? "incomplete" : "completed", ojson::array({text_part(*output_text)})));
  }
  r["parallel_tool_calls"] = true;
  r["previous_response_id"] = opt(echo.previous_response_id);
  r["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  r["store"] = echo.store;
  r["temperature"] = echo.temperature;
  r["text"] = {{"format", {{"type", "text"}}}};
  r["tool_choice"] = "auto";
  r["tools"] = ojson::array();
  r["top_p"] = echo.top_p;
  r["truncation"] = "disabled";
  r["usage"] = ending ? usage_object(ending->usage) : ojson(nullptr);
  r["user"] = opt(echo.user);
  r["metadata"] = echo.metadata;
  return r;
}

std::string ResponsesEncoder::event(const std::string& type, ojson fields) {
  ojson e{{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [k, v] : fields.items()) e[k] = std::move(v);
  return sse_named_event(type, e);
}

void ResponsesEncoder::keep(const std::string& text) {
  if (!store_) return;
  ojson conversation = conversation_;
  conversation.push_back({{"role", "assistant"}, {"content", text}});
  store_->put(echo_.id, std::move(conversation));
}

std::string ResponsesEncoder::stream_start(const Usage&) {
  const ojson r = response_object(echo_, std::nullopt, nullptr);
  std::string out = event("response.created", {{"response", r}});
  out += event("response.in_progress", {{"response", r}});
  out += event("response.output_item.added", {{"output_index", 0}, {"item", message_item(echo_, "in_progress", ojson::array())}});
  ojson empty = text_part("");
  empty.erase("logprobs");
  out += event("response.content_part.added",
               {{"item_id", echo_.item_id}, {"output_index", 0}, {"content_index", 0}, {"part", empty}});
  return out;
}

std::string ResponsesEncoder::stream_text(const std::string& text) {
  return event("response.output_text.delta", {{"item_id", echo_.item_id},
                                              {"output_index", 0},
                                              {"content_index", 0},
                                              {"delta", text},
                                              {"logprobs", ojson::array()}});
}

std::string ResponsesEncoder::stream_finish(const std::string& text, const CallEnding& ending) {
  keep(text);
  const ojson part = text_part(text);
  const std::string status = is_incomplete(ending) ? "incomplete" : "completed";
  std::string out = event("response.output_text.done", {{"item_id", echo_.item_id},
                                                        {"output_index", 0},
                                                        {"content_index", 0},
                                                        {"text", text},
                                                        {"logprobs", ojson::array()}});
  out += event("response.content_part.done", {{"item_id", echo_.item_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}});
  out += event("response.output_item.done", {{"output_index", 0}, {"item", message_item(echo_, status, ojson::array({part}))}});
  out += event(is_incomplete(ending) ? "response.incomplete" : "response.completed",
               {{"response", response_object(echo_, text, &ending)}});
  return out;
}

std::string ResponsesEncoder::stream_error(int, const std::string& message, const std::string& code) {
  ojson r = response_object(echo_, std::nullopt, nullptr);
  r["status"] = "failed";
  r["error"] = {{"code", code == "timeout" ? "timeout" : "server_error"}, {"message", message}};
  return event("response.failed", {{"response", r}});
}

std::string ResponsesEncoder::body(const std::string& text, const CallEnding& ending) {
  keep(text);
  return dump_json(response_object(echo_, text, &ending));
}

}  // namespace lemma::server
