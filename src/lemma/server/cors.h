// CORS for browser clients (`lemma serve --allowed-origins`): which response headers a request's
// Origin gets, and the answer to a preflight OPTIONS request. Off (no headers, OPTIONS is a 404/405
// as before) while the list is empty; "*" allows any origin. Pure functions; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lemma/server/http_types.h"

namespace lemma::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

bool cors_enabled(const std::vector<std::string>& allowed_origins);
// Access-Control-Allow-Origin (and Vary, Expose-Headers) for a request from `origin`; empty when
// CORS is off, the request has no Origin, or the origin is not allowed.
HeaderList cors_headers(const std::vector<std::string>& allowed_origins, const std::string& origin);
// A preflight: OPTIONS with Origin and Access-Control-Request-Method, while CORS is on.
bool is_cors_preflight(const std::vector<std::string>& allowed_origins, const HttpRequest& request);
// 204 with the allowed methods and the requested headers for an allowed origin; 403 otherwise.
HttpResponse cors_preflight_response(const std::vector<std::string>& allowed_origins, const HttpRequest& request);

}  // namespace lemma::server
