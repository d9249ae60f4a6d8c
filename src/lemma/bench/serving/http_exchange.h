// One HTTP/1.1 exchange over a fresh connection (Boost.Beast, as an Asio coroutine): send a request,
// read the response head, then read the body as it arrives and hand every piece to a callback, so
// streamed (SSE, chunked) responses can be timed byte by byte. Each exchange owns its socket; many
// run at once on one io_context.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace lemma::bench::serving {

struct HttpCall {
  std::string method = "POST";
  std::string target;       // e.g. "/v1/completions"
  std::string host_header;  // the Host header's value
  std::string body;         // sent as application/json when not empty
  std::map<std::string, std::string> headers;
};

struct HttpHead {
  int status = 0;
  std::string content_type;
};

using OnHead = std::function<void(const HttpHead&)>;
using OnBody = std::function<void(std::string_view bytes)>;

// Returns "" when the whole response was read, else what went wrong ("connect: ...", "read: ...",
// "timed out ..."). Nothing outlives the returned awaitable; `call` must live until it completes.
boost::asio::awaitable<std::string> http_exchange(const boost::asio::ip::tcp::resolver::results_type& endpoints,
                                                  const HttpCall& call, std::chrono::steady_clock::time_point deadline,
                                                  OnHead on_head, OnBody on_body);

}  // namespace lemma::bench::serving
