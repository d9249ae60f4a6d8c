#include "lemma/server/cors.h"

#include <algorithm>

#include "lemma/server/api_error.h"

namespace lemma::server {

namespace {
bool allows_any(const std::vector<std::string>& allowed) {
  return std::find(allowed.begin(), allowed.end(), "*") != allowed.end();
}
bool allows(const std::vector<std::string>& allowed, const std::string& origin) {
  return allows_any(allowed) || std::find(allowed.begin(), allowed.end(), origin) != allowed.end();
}
}  // namespace

bool cors_enabled(const std::vector<std::string>& allowed_origins) { return !allowed_origins.empty(); }

HeaderList cors_headers(const std::vector<std::string>& allowed, const std::string& origin) {
  if (!cors_enabled(allowed) || origin.empty() || !allows(allowed, origin)) return {};
  HeaderList h;
  if (allows_any(allowed)) {
    h.emplace_back("Access-Control-Allow-Origin", "*");
  } else {
    h.emplace_back("Access-Control-Allow-Origin", origin);
    h.emplace_back("Vary", "Origin");
  }
  h.emplace_back("Access-Control-Expose-Headers", "x-request-id, traceparent, retry-after");
  return h;
}

bool is_cors_preflight(const std::vector<std::string>& allowed, const HttpRequest& request) {
  return cors_enabled(allowed) && request.method == "OPTIONS" && !request.header("origin").empty() &&
         !request.header("access-control-request-method").empty();
}

HttpResponse cors_preflight_response(const std::vector<std::string>& allowed, const HttpRequest& request) {
  const std::string origin = request.header("origin");
  if (!allows(allowed, origin)) {
    HttpResponse r;
    r.status = 403;
    r.body = error_body(403, "the origin " + origin + " is not allowed (--allowed-origins)", "", std::string("origin_not_allowed"));
    return r;
  }
  HttpResponse r;
  r.status = 204;
  r.content_type = "text/plain";
  r.headers = cors_headers(allowed, origin);
  r.headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  const std::string asked = request.header("access-control-request-headers");
  r.headers.emplace_back("Access-Control-Allow-Headers",
                         asked.empty() ? "authorization, content-type, x-api-key, anthropic-version" : asked);
  r.headers.emplace_back("Access-Control-Max-Age", "600");
  return r;
}

}  // namespace lemma::server
