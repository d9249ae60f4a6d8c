#include "lemma/server/anthropic_request.h"

#include <limits>

#include "lemma/server/api_error.h"
#include "lemma/server/body_fields.h"

namespace lemma::server {

using nlohmann::json;

namespace {

// A string, or an array of {"type": "text", "text": ...} blocks (cache_control and citations are
// accepted: they change nothing here). Other block types are refused by name.
std::string block_text(const json& content, const std::string& field) {
  return joined_text_parts(content, field, {"text"}, {"type", "text", "cache_control", "citations"});
}

void parse_conversation(const json& body, ParsedCompletion& c) {
  c.messages = nlohmann::ordered_json::array();
  if (has_field(body, "system")) c.messages.push_back({{"role", "system"}, {"content", block_text(body.at("system"), "system")}});
  if (!has_field(body, "messages")) fail_field("messages", "is required");
  const json& msgs = body.at("messages");
  if (!msgs.is_array() || msgs.empty()) fail_field("messages", "must be a non-empty array");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const json& m = msgs[i];
    const std::string field = fmt::format("messages[{}]", i);
    if (!m.is_object()) fail_field(field, "must be an object");
    only_fields(m, {"role", "content"}, field + ".");
    if (!m.contains("role") || (m.at("role") != "user" && m.at("role") != "assistant"))
      fail_field(field + ".role", "must be \"user\" or \"assistant\"");
    if (!m.contains("content")) fail_field(field + ".content", "is required");
    const std::string role = m.at("role").get<std::string>();
    std::string text = block_text(m.at("content"), field + ".content");
    if (role == "assistant" && i + 1 == msgs.size()) {
      c.assistant_prefill = std::move(text);  // the answer continues it
    } else {
      c.messages.push_back({{"role", role}, {"content", std::move(text)}});
    }
  }
  if (c.messages.empty() || c.messages.back().at("role") == "system")
    fail_field("messages", "needs a user message before the final assistant message");
}

void parse_sampling(const json& body, ParsedCompletion& c) {
  if (has_field(body, "temperature")) c.sampling.temperature = float(number_field(body, "temperature", 0, 1));
  if (has_field(body, "top_p")) {
    c.sampling.top_p = float(number_field(body, "top_p", 0, 1));
    if (c.sampling.top_p <= 0.0f) fail_field("top_p", "must be > 0");
  }
  if (has_field(body, "top_k")) c.sampling.top_k = int32_t(integer_field(body, "top_k", 1, std::numeric_limits<int32_t>::max()));
  if (has_field(body, "stop_sequences")) {
    const json& s = body.at("stop_sequences");
    if (!s.is_array()) fail_field("stop_sequences", "must be an array of strings");
    for (const json& x : s) {
      if (!x.is_string() || x.get<std::string>().empty()) fail_field("stop_sequences", "must hold non-empty strings");
      c.stop.push_back(x.get<std::string>());
    }
    if (c.stop.size() > 16) fail_field("stop_sequences", "at most 16 stop sequences");
  }
}

// Fields lemma cannot honour are refused unless they ask for nothing (an empty tool list, thinking off).
void refuse_unhonoured(const json& body) {
  if (has_field(body, "tools") && !(body.at("tools").is_array() && body.at("tools").empty()))
    fail_field("tools", "tool use is not supported on /v1/messages");
  if (has_field(body, "tool_choice")) {
    const json& t = body.at("tool_choice");
    if (!t.is_object() || (t.value("type", "") != "auto" && t.value("type", "") != "none"))
      fail_field("tool_choice", "only {\"type\": \"auto\"} or {\"type\": \"none\"} (no tools are supported)");
  }
  if (has_field(body, "thinking") && !(body.at("thinking").is_object() && body.at("thinking").value("type", "") == "disabled"))
    fail_field("thinking", "extended thinking is not supported; omit it or send {\"type\": \"disabled\"}");
  if (has_field(body, "metadata") && !body.at("metadata").is_object()) fail_field("metadata", "must be an object");
}

}  // namespace

ParsedCompletion parse_messages_request(const std::string& text, const ServerConfig& config) {
  const json body = parse_json_object(text);
  only_fields(body, {"model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p", "top_k",
                     "stream", "metadata", "service_tier", "tools", "tool_choice", "thinking"});
  refuse_unhonoured(body);
  ParsedCompletion c;
  c.kind = ApiKind::kChat;
  c.streaming = config.default_streaming;
  if (has_field(body, "model")) c.model = string_field(body, "model");
  if (has_field(body, "stream")) c.stream = bool_field(body, "stream");
  if (!has_field(body, "max_tokens")) fail_field("max_tokens", "is required");
  c.max_tokens = integer_field(body, "max_tokens", 1, std::numeric_limits<int32_t>::max());
  parse_conversation(body, c);
  parse_sampling(body, c);
  return c;
}

}  // namespace lemma::server
