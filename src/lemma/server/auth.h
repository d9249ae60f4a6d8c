// API-key authentication: `Authorization: Bearer <key>` or (Anthropic's clients) `x-api-key: <key>`,
// compared in constant time. Pure; thread-safe.
#pragma once

#include <string>

#include "lemma/server/http_types.h"

namespace lemma::server {

// True when `api_key` is empty or the request carries it in either header.
bool is_authorized(const HttpRequest& request, const std::string& api_key);

}  // namespace lemma::server
