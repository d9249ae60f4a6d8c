// The JSON body of one streamed benchmark request to /v1/completions or /v1/chat/completions:
// model, prompt (or one user message), max_tokens, stream with stream_options.include_usage,
// temperature 0 and, when asked, vLLM's ignore_eos extension, then any extra fields (e.g. a
// response_format, to load the server with constrained requests). Pure; thread-safe.
#pragma once

#include <string>

#include "lemma/bench/serving/stream_validator.h"

namespace lemma::bench::serving {

struct RequestShape {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  bool include_usage = true;
  bool ignore_eos = false;
  std::string extra_body;  // a JSON object whose fields are added to (or replace) the body's; "" = none
};

std::string request_body(const RequestShape& shape, const std::string& prompt, int64_t max_tokens);
const char* endpoint_route(Endpoint endpoint);  // "/v1/completions" or "/v1/chat/completions"
const char* endpoint_name(Endpoint endpoint);   // "completions" or "chat"

}  // namespace lemma::bench::serving
