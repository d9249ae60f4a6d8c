#include "lemma/server/request_fields.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "lemma/server/api_error.h"

namespace lemma::server {

using nlohmann::json;

namespace {

// Honoured by both endpoints (see server/README.md for what each does).
constexpr std::array<std::string_view, 33> kCommonFields = {
    "model", "stream", "stream_options", "temperature", "top_p", "top_k", "min_p", "presence_penalty",
    "frequency_penalty", "repetition_penalty", "seed", "logit_bias", "max_tokens", "max_completion_tokens", "n",
    "stop", "stop_token_ids", "ignore_eos", "logprobs",
    // beam search (vLLM's fields; openai_request.cpp)
    "use_beam_search", "best_of", "length_penalty", "early_stopping",
    // structured output (output_constraint.h)
    "response_format", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs", "json_schema",
    "grammar",
    // attention sinks (G10, openai_request.cpp)
    "attention_sinks", "streaming_window"};
// Accepted and ignored: they change nothing a client can observe here (README lists them).
constexpr std::array<std::string_view, 4> kIgnoredFields = {"user", "metadata", "store", "service_tier"};
constexpr std::array<std::string_view, 2> kCompletionFields = {"prompt", "echo"};
constexpr std::array<std::string_view, 5> kChatFields = {"messages", "top_logprobs", "tools", "tool_choice",
                                                         "parallel_tool_calls"};
constexpr std::array<std::string_view, 5> kRoles = {"system", "developer", "user", "assistant", "tool"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

bool is_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

void check_tool(const json& tool, const std::string& field) {
  if (!tool.is_object()) fail_field(field, "must be an object {\"type\": \"function\", \"function\": {...}}");
  for (const auto& [key, value] : tool.items()) {
    if (key != "type" && key != "function") fail_field(field + "." + key, "is not a tool field");
  }
  if (!tool.contains("type") || tool.at("type") != "function") fail_field(field + ".type", "must be \"function\"");
  if (!tool.contains("function") || !tool.at("function").is_object()) fail_field(field + ".function", "must be an object");
  const json& fn = tool.at("function");
  for (const auto& [key, value] : fn.items()) {
    const std::string f = field + ".function." + key;
    if (key == "name") {
      if (!value.is_string() || !is_function_name(value.get<std::string>()))
        fail_field(f, "must be 1-64 characters of a-z, A-Z, 0-9, _ and -");
    } else if (key == "description") {
      if (!value.is_string()) fail_field(f, "must be a string");
    } else if (key == "parameters") {
      if (!value.is_object()) fail_field(f, "must be a JSON Schema object");
    } else if (key == "strict") {
      if (!value.is_boolean() && !value.is_null()) fail_field(f, "must be a boolean");
    } else {
      fail_field(f, "is not a function field");
    }
  }
  if (!fn.contains("name")) fail_field(field + ".function.name", "is required");
}

}  // namespace

void reject_unknown_fields(const json& body, ApiKind kind) {
  for (const auto& [key, value] : body.items()) {
    if (contains(kCommonFields, key) || contains(kIgnoredFields, key)) continue;
    if (kind == ApiKind::kCompletions ? contains(kCompletionFields, key) : contains(kChatFields, key)) continue;
    fail_field(key, fmt::format("is not a field this server knows for {}; see the server README for the fields it "
                                "honours", kind == ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions"));
  }
  if (body.contains("store") && body.at("store") == true) {
    fail_field("store", "this server does not store completions; send false or leave it out");
  }
}

void check_tools(const json& body) {
  const bool has_tools = body.contains("tools") && !body.at("tools").is_null();
  if (has_tools) {
    const json& tools = body.at("tools");
    if (!tools.is_array() || tools.empty()) fail_field("tools", "must be a non-empty array of function tools");
    for (size_t i = 0; i < tools.size(); ++i) check_tool(tools[i], fmt::format("tools[{}]", i));
  }
  if (body.contains("parallel_tool_calls") && !body.at("parallel_tool_calls").is_boolean() &&
      !body.at("parallel_tool_calls").is_null()) {
    fail_field("parallel_tool_calls", "must be a boolean");
  }
  if (!body.contains("tool_choice") || body.at("tool_choice").is_null()) return;
  const json& choice = body.at("tool_choice");
  if (choice == "none" || choice == "auto") return;
  if (choice == "required") {
    if (!has_tools) fail_field("tool_choice", "\"required\" needs tools");
    return;
  }
  if (choice.is_object()) {
    if (!choice.contains("type") || choice.at("type") != "function" || !choice.contains("function") ||
        !choice.at("function").is_object() || !choice.at("function").contains("name") ||
        !choice.at("function").at("name").is_string())
      fail_field("tool_choice", "must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    if (!has_tools) fail_field("tool_choice", "names a function but the request has no tools");
    const std::string name = choice.at("function").at("name").get<std::string>();
    for (const json& tool : body.at("tools"))
      if (tool.at("function").at("name") == name) return;
    fail_field("tool_choice.function.name", "\"" + name + "\" is not one of the request's tools");
  }
  fail_field("tool_choice", "must be \"none\", \"auto\", \"required\" or a function object");
}

void check_role(const std::string& role, const std::string& field) {
  if (!contains(kRoles, role)) {
    fail_field(field, "\"" + role + "\" is not a chat role (system, developer, user, assistant, tool)");
  }
}

}  // namespace lemma::server
