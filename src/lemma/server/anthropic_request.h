// Parsing of Anthropic Messages API request bodies (POST /v1/messages) into the ParsedCompletion
// every generation endpoint runs on: `system` becomes the first chat message, text blocks are
// joined, `stop_sequences` are stop strings. A final assistant message is a prefill the answer
// continues (ParsedCompletion::assistant_prefill). Every rejected value throws ApiError(400)
// naming the field. Pure functions; thread-safe.
#pragma once

#include <string>

#include "lemma/server/openai_request.h"

namespace lemma::server {

// kind kChat, messages in OpenAI's chat form.
ParsedCompletion parse_messages_request(const std::string& body, const ServerConfig& config);

}  // namespace lemma::server
