// The OpenAI request fields the server knows, and the fail-closed checks on those it does not
// honour yet: an unknown field, a `response_format` other than text, `tools` of the wrong shape or
// a `tool_choice` that would need tool-call parsing is a 400 naming the field, never silently
// dropped. Pure functions over the parsed JSON body.
#pragma once

#include <nlohmann/json.hpp>

#include "lemma/server/openai_request.h"

namespace lemma::server {

// Throws ApiError(400) naming the first field of `body` that `kind` does not know.
void reject_unknown_fields(const nlohmann::json& body, ApiKind kind);


// Throws ApiError(400) naming the part of `tools` / `tool_choice` that is malformed or not honoured.
void check_tools(const nlohmann::json& body);

// Throws ApiError(400) naming messages[i].role when it is not a chat role.
void check_role(const std::string& role, const std::string& field);

}  // namespace lemma::server
