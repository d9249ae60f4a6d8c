// Beast-free HTTP request/response values that the router and endpoint handlers work on, so only
// server.cpp and session.cpp include Boost.Beast. Plain values; thread-compatible.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lemma::server {

struct HttpRequest {
  std::string method;                         // "GET", "POST", ...
  std::string target;                         // path (query string stripped)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string remote;                         // peer address, for logs

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

}  // namespace lemma::server
