// ApiError: a request the server refuses, carrying the HTTP status and the OpenAI error object
// `{"error": {"message", "type", "param", "code"}}` it is reported as. Plain value; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "lemma/base/error.h"

namespace lemma::server {

class ApiError : public Error {
 public:
  ApiError(int status, std::string message, std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt);
  int status() const { return status_; }
  // OpenAI's `type` for the status: invalid_request_error, authentication_error, ...
  std::string type() const;
  const std::optional<std::string>& param() const { return param_; }
  const std::optional<std::string>& code() const { return code_; }
  // The serialised error object.
  std::string body() const;

 private:
  int status_;
  std::optional<std::string> param_, code_;
};

// 400 naming the offending field.
[[noreturn]] void fail_field(const std::string& field, const std::string& message);

// Serialised error object for a status without throwing (e.g. for SSE error events).
std::string error_body(int status, const std::string& message, const std::string& type,
                       const std::optional<std::string>& code = std::nullopt);

}  // namespace lemma::server
