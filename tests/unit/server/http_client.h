// A small blocking HTTP/1.1 client for the server tests (loopback only), plus SSE parsing.
// Every socket read has a timeout so a broken server fails a test instead of hanging it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lemma::server::testing {

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  nlohmann::json json() const { return nlohmann::json::parse(body); }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

HttpResult http_request(uint16_t port, const std::string& method, const std::string& target,
                        const std::string& body = "", const std::map<std::string, std::string>& headers = {});
inline HttpResult post_json(uint16_t port, const std::string& target, const nlohmann::json& body,
                            const std::map<std::string, std::string>& headers = {}) {
  return http_request(port, "POST", target, body.dump(), headers);
}

// Splits an SSE body into its `data:` payloads; fails the test (ADD_FAILURE) on bad framing.
std::vector<std::string> sse_payloads(const std::string& body);

// A raw TCP connection for partial reads and abrupt closes.
class RawConnection {
 public:
  // `receive_buffer_bytes` > 0: a small socket receive buffer (a reader that fills up quickly).
  explicit RawConnection(uint16_t port, int receive_buffer_bytes = 0);
  ~RawConnection();
  void send(const std::string& bytes);
  // Reads until `needle` appears in everything read so far, or `timeout_ms` passes.
  std::string read_until(const std::string& needle, int timeout_ms);
  void close();
  // True once a read saw the server close (EOF) or reset the connection.
  bool peer_closed() const { return peer_closed_; }

 private:
  int fd_ = -1;
  std::string got_;
  bool peer_closed_ = false;
};

std::string raw_post(const std::string& target, const std::string& body);

}  // namespace lemma::server::testing
