#include "lemma/server/api_error.h"

#include <nlohmann/json.hpp>

namespace lemma::server {

namespace {
std::string type_for(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 405: return "method_not_allowed_error";
    case 408: case 504: return "timeout_error";
    case 413: return "request_too_large_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}
}  // namespace

ApiError::ApiError(int status, std::string message, std::optional<std::string> param, std::optional<std::string> code)
    : Error(std::move(message)), status_(status), param_(std::move(param)), code_(std::move(code)) {}

std::string ApiError::type() const { return type_for(status_); }

std::string ApiError::body() const {
  nlohmann::ordered_json e;
  e["message"] = what();
  e["type"] = type();
  e["param"] = param_ ? nlohmann::ordered_json(*param_) : nlohmann::ordered_json(nullptr);
  e["code"] = code_ ? nlohmann::ordered_json(*code_) : nlohmann::ordered_json(nullptr);
  return nlohmann::ordered_json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void fail_field(const std::string& field, const std::string& message) {
  throw ApiError(400, field + ": " + message, field);
}

std::string error_body(int status, const std::string& message, const std::string& type,
                       const std::optional<std::string>& code) {
  nlohmann::ordered_json e;
  e["message"] = message;
  e["type"] = type.empty() ? type_for(status) : type;
  e["param"] = nullptr;
  e["code"] = code ? nlohmann::ordered_json(*code) : nlohmann::ordered_json(nullptr);
  return nlohmann::ordered_json{{"error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lemma::server
