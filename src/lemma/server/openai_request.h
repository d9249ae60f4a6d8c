// Parsing and validation of OpenAI /v1/completions and /v1/chat/completions request bodies into
// a ParsedCompletion. Every rejected value throws ApiError(400) naming the field. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemma/server/output_constraint.h"
#include "lemma/server/tool_calls.h"

#include "lemma/kv/streaming_window.h"
#include "lemma/sampling/sampling_params.h"
#include "lemma/server/server_config.h"

namespace lemma::server {

enum class ApiKind { kCompletions, kChat };

struct ParsedCompletion {
  ApiKind kind = ApiKind::kCompletions;
  std::string model;                       // empty: the served model
  bool stream = false;
  bool include_usage = false;              // stream_options.include_usage
  // Completions: a string prompt or token ids. Chat: the messages (content flattened to text).
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_ids;
  nlohmann::ordered_json messages;
  // Chat: text the answer continues, tokenised after the rendered prompt (Anthropic's prefill).
  std::string assistant_prefill;
  nlohmann::ordered_json tools;            // null when absent
  bool wants_tool_calls = false;           // tools given and tool_choice not "none"
  bool parallel_tool_calls = true;         // false: at most one call is reported
  std::optional<std::string> forced_tool;  // tool_choice "required" (empty: any tool) or a named function
  ToolCallFormat tool_format = ToolCallFormat::kNone;  // set by the handler when wants_tool_calls
  bool tool_calls_constrained = false;  // a tool-call grammar guards the calls: stream them piece by piece
  OutputConstraintSpec output_constraint;  // structured output; compiled by the handler
  SamplingParams sampling;
  std::optional<int64_t> max_tokens;       // max_tokens / max_completion_tokens
  int n = 1;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool echo = false;                       // completions: prepend the prompt text
  std::string user;
  StreamingWindow streaming = {};          // attention sinks (G10): the request's or the server's default
};

// `body` is the raw request text; throws ApiError(400) for malformed JSON or bad fields.
ParsedCompletion parse_completion_request(const std::string& body, ApiKind kind, const ServerConfig& config);

// Parses a JSON object body or throws ApiError(400, "malformed JSON ...").
nlohmann::json parse_json_object(const std::string& body);

}  // namespace lemma::server
