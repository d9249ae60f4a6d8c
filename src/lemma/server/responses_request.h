// Parsing of OpenAI Responses API request bodies (POST /v1/responses) into the ParsedCompletion
// every generation endpoint runs on: `input` (a string or message items) after the conversation
// of `previous_response_id` (from the ResponseStore), `instructions` as the first system message
// (never carried over from a previous response, as OpenAI's). Every rejected value throws
// ApiError(400) naming the field. Thread-safe (the store is).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lemma/server/openai_request.h"
#include "lemma/server/response_store.h"

namespace lemma::server {

struct ParsedResponseRequest {
  ParsedCompletion completion = {};          // kind kChat: instructions, then the conversation
  nlohmann::ordered_json conversation = {};  // the previous chain + this input, no instructions (what is stored)
  std::optional<std::string> instructions = {};
  std::optional<std::string> previous_response_id = {};
  std::optional<int64_t> max_output_tokens = {};
  bool store = true;                         // keep the result for a later previous_response_id
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();  // echoed in the response
};

ParsedResponseRequest parse_responses_request(const std::string& body, const ServerConfig& config, ResponseStore& store);

}  // namespace lemma::server
