#include "lemma/bench/serving/http_exchange.h"

#include <array>
#include <limits>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace lemma::bench::serving {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {
std::string describe(const char* step, const beast::error_code& ec) {
  if (ec == beast::error::timeout) return std::string("timed out during ") + step;
  return std::string(step) + ": " + ec.message();
}
}  // namespace

net::awaitable<std::string> http_exchange(const net::ip::tcp::resolver::results_type& endpoints, const HttpCall& call,
                                          std::chrono::steady_clock::time_point deadline, OnHead on_head, OnBody on_body) {
  beast::tcp_stream stream(co_await net::this_coro::executor);
  stream.expires_at(deadline);  // covers every operation below
  beast::error_code ec;
  co_await stream.async_connect(endpoints, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return describe("connect", ec);

  http::request<http::string_body> req{http::string_to_verb(call.method), call.target, 11};
  req.set(http::field::host, call.host_header);
  req.set(http::field::user_agent, "lemma-bench-serve");
  if (!call.body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : call.headers) req.set(name, value);
  req.body() = call.body;
  req.prepare_payload();
  co_await http::async_write(stream, req, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return describe("write", ec);

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  co_await http::async_read_header(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
  if (ec) co_return describe("reading the response head", ec);
  HttpHead head;
  head.status = static_cast<int>(parser.get().result_int());
  head.content_type = std::string(parser.get()[http::field::content_type]);
  on_head(head);

  std::array<char, 16384> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    // read_some returns after each socket read, so every SSE event is timed when it arrives
    // (async_read would wait until the buffer is full or the response ends).
    co_await http::async_read_some(stream, buffer, parser, net::redirect_error(net::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = chunk.size() - parser.get().body().size;
    if (got > 0) on_body(std::string_view(chunk.data(), got));
    if (ec) co_return describe("reading the response body", ec);
  }
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  co_return "";
}

}  // namespace lemma::bench::serving
