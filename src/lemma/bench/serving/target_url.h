// The server a serving benchmark drives, from a base URL such as http://127.0.0.1:8000 or
// http://host:8000/v1 (plain HTTP only; the /v1 routes are appended to the path). Pure; thread-safe.
#pragma once

#include <string>

namespace lemma::bench::serving {

struct TargetUrl {
  std::string host;
  std::string port = "80";
  std::string base_path;  // without a trailing slash and without a trailing /v1: "" or "/prefix"
  // The request target of an OpenAI route such as "/v1/completions".
  std::string target(const std::string& route) const { return base_path + route; }
  std::string host_header() const { return port == "80" ? host : host + ":" + port; }
};

// Throws InvalidArgument naming the URL for anything but http://host[:port][/path].
TargetUrl parse_target_url(const std::string& url);

}  // namespace lemma::bench::serving
