// One HTTP connection: a coroutine that reads requests (keep-alive), routes them, and for
// generation requests drives a CompletionCall against the engine, writing SSE or one body.
// Runs on the connection's strand; shares only the thread-safe ServerContext.
#pragma once

#include <utility>  // boost 1.74 awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "lemma/server/server_context.h"

namespace lemma::server {

boost::asio::awaitable<void> run_session(boost::asio::ip::tcp::socket socket, ServerContext& ctx);

}  // namespace lemma::server
