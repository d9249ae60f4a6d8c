#include "lemma/server/responses_request.h"

#include <limits>

#include "lemma/server/api_error.h"
#include "lemma/server/body_fields.h"

namespace lemma::server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// A message item's content: a string, or input_text / output_text parts (joined).
std::string item_text(const json& content, const std::string& field) {
  return joined_text_parts(content, field, {"input_text", "output_text"}, {"type", "text", "annotations", "logprobs"});
}

void append_input(const json& input, ojson& conversation) {
  if (input.is_string()) {
    conversation.push_back({{"role", "user"}, {"content", input.get<std::string>()}});
    return;
  }
  if (!input.is_array() || input.empty()) fail_field("input", "must be a string or a non-empty array of message items");
  for (size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string field = fmt::format("input[{}]", i);
    if (!item.is_object()) fail_field(field, "must be an object");
    if (item.contains("type") && item.at("type") != "message")
      fail_field(field + ".type", "only message items are supported (got " + item.at("type").dump() + ")");
    only_fields(item, {"type", "role", "content", "id", "status"}, field + ".");
    const json role = item.value("role", json());
    if (role != "user" && role != "assistant" && role != "system" && role != "developer")
      fail_field(field + ".role", "must be \"user\", \"assistant\", \"system\" or \"developer\"");
    if (!item.contains("content")) fail_field(field + ".content", "is required");
    conversation.push_back({{"role", role.get<std::string>()}, {"content", item_text(item.at("content"), field + ".content")}});
  }
}

// Fields lemma cannot honour are refused unless they ask for nothing (an empty tool list, text output).
void refuse_unhonoured(const json& body) {
  if (has_field(body, "tools") && !(body.at("tools").is_array() && body.at("tools").empty()))
    fail_field("tools", "tools are not supported on /v1/responses");
  if (has_field(body, "tool_choice") && body.at("tool_choice") != "none" && body.at("tool_choice") != "auto")
    fail_field("tool_choice", "only \"none\" or \"auto\" (no tools are supported)");
  if (has_field(body, "text")) {
    const json& t = body.at("text");
    if (!t.is_object()) fail_field("text", "must be an object");
    only_fields(t, {"format", "verbosity"}, "text.");
    if (has_field(t, "format") && (!t.at("format").is_object() || t.at("format").value("type", "") != "text"))
      fail_field("text.format", "only {\"type\": \"text\"} is supported");
    if (has_field(t, "verbosity")) fail_field("text.verbosity", "is not supported");
  }
  if (has_field(body, "include") && !(body.at("include").is_array() && body.at("include").empty()))
    fail_field("include", "no extra output data is supported");
  if (has_field(body, "truncation") && body.at("truncation") != "disabled")
    fail_field("truncation", "only \"disabled\" (too long a conversation is a 400)");
  if (has_field(body, "reasoning") && !(body.at("reasoning").is_object() && body.at("reasoning").empty()))
    fail_field("reasoning", "reasoning options are not supported");
  if (has_field(body, "background") && body.at("background") != false) fail_field("background", "background responses are not supported");
  if (has_field(body, "top_logprobs") && body.at("top_logprobs") != 0) fail_field("top_logprobs", "logprobs are not supported on /v1/responses");
  if (has_field(body, "metadata") && !body.at("metadata").is_object()) fail_field("metadata", "must be an object");
}

}  // namespace

ParsedResponseRequest parse_responses_request(const std::string& text, const ServerConfig& config, ResponseStore& store) {
  const json body = parse_json_object(text);
  only_fields(body, {"model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream",
                     "previous_response_id", "store", "metadata", "user", "service_tier", "parallel_tool_calls",
                     "tools", "tool_choice", "text", "include", "truncation", "reasoning", "background", "top_logprobs",
                     "max_tool_calls", "safety_identifier", "prompt_cache_key", "stream_options"});
  refuse_unhonoured(body);
  ParsedResponseRequest out;
  ParsedCompletion& c = out.completion;
  c.kind = ApiKind::kChat;
  c.streaming = config.default_streaming;
  if (has_field(body, "model")) c.model = string_field(body, "model");
  if (has_field(body, "stream")) c.stream = bool_field(body, "stream");
  if (has_field(body, "stream_options") && !c.stream) fail_field("stream_options", "is only allowed with \"stream\": true");
  if (has_field(body, "store")) out.store = bool_field(body, "store");
  if (has_field(body, "metadata")) out.metadata = ojson::parse(body.at("metadata").dump());
  if (has_field(body, "user")) c.user = string_field(body, "user");
  if (has_field(body, "temperature")) c.sampling.temperature = float(number_field(body, "temperature", 0, 2));
  if (has_field(body, "top_p")) {
    c.sampling.top_p = float(number_field(body, "top_p", 0, 1));
    if (c.sampling.top_p <= 0.0f) fail_field("top_p", "must be > 0");
  }
  if (has_field(body, "max_output_tokens")) {
    out.max_output_tokens = integer_field(body, "max_output_tokens", 1, std::numeric_limits<int32_t>::max());
    c.max_tokens = out.max_output_tokens;
  }
  out.conversation = ojson::array();
  if (has_field(body, "previous_response_id")) {
    out.previous_response_id = string_field(body, "previous_response_id");
    std::optional<ojson> previous = store.get(*out.previous_response_id);
    if (!previous)
      fail_field("previous_response_id", "no stored response '" + *out.previous_response_id +
                                             "' (it was sent with store: false, or dropped from the bounded store)");
    out.conversation = std::move(*previous);
  }
  if (!has_field(body, "input")) fail_field("input", "is required");
  append_input(body.at("input"), out.conversation);
  c.messages = ojson::array();
  if (has_field(body, "instructions")) {
    out.instructions = string_field(body, "instructions");
    c.messages.push_back({{"role", "system"}, {"content", *out.instructions}});
  }
  for (const ojson& m : out.conversation) c.messages.push_back(m);
  return out;
}

}  // namespace lemma::server
