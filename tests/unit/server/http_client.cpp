#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

namespace lemma::server::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

HttpResult http_request(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                        const std::map<std::string, std::string>& headers) {
  net::io_context ioc;
  net::ip::tcp::socket socket(ioc);
  socket.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  timeval tv{20, 0};  // no single read may hang a test
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  beast::error_code ec;
  http::write(socket, req, ec);
  HttpResult out;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(socket, buffer, parser, ec);
  if (ec) {
    ADD_FAILURE() << "http read failed: " << ec.message();
    return out;
  }
  auto res = parser.release();
  out.status = int(res.result_int());
  for (const auto& f : res) {
    std::string name(f.name_string());
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(f.value());
  }
  out.body = res.body();
  socket.close(ec);
  return out;
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "SSE event without its blank line: " << body.substr(pos);
      break;
    }
    std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) != 0 || event.find('\n') != std::string::npos) {
      ADD_FAILURE() << "SSE event is not one `data: ` line: " << event;
    } else {
      out.push_back(event.substr(6));
    }
    pos = end + 2;
  }
  return out;
}

RawConnection::RawConnection(uint16_t port, int receive_buffer_bytes) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (receive_buffer_bytes > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof receive_buffer_bytes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ADD_FAILURE() << "connect failed";
}

RawConnection::~RawConnection() { close(); }

void RawConnection::send(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ADD_FAILURE() << "send failed";
      return;
    }
    sent += size_t(n);
  }
}

std::string RawConnection::read_until(const std::string& needle, int timeout_ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[4096];
  while (got_.find(needle) == std::string::npos && std::chrono::steady_clock::now() < until) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      peer_closed_ = true;
      break;
    }
    got_.append(buf, size_t(n));
  }
  return got_;
}

void RawConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string raw_post(const std::string& target, const std::string& body) {
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace lemma::server::testing
