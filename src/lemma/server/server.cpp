#include "lemma/server/server.h"

#include <cstdio>
#include <cstdlib>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <ctime>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/server/api_error.h"
#include "lemma/server/server_context.h"
#include "lemma/server/session.h"
#include "lemma/tokenizer/jinja/default_chat_template.h"

namespace lemma::server {

namespace net = boost::asio;
using net::ip::tcp;

constexpr auto kMinAcceptBackoff = std::chrono::milliseconds(20);
constexpr auto kMaxAcceptBackoff = std::chrono::milliseconds(250);
constexpr int kMaxRefusedPerPause = 256;

// Best effort, never blocking: a 503 on a connection the server will not serve.
void refuse_connection(int fd, const std::string& message) {
  const std::string body = error_body(503, message, "", std::string("too_many_connections"));
  const std::string response = fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nServer: lemma\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
      body.size(), body);
  [[maybe_unused]] ssize_t sent = ::send(fd, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
}

struct Server::Impl {
  Impl(ServerConfig config, EngineClient& engine, Tokenizer tokenizer, ChatTemplate tpl)
      : ctx(std::move(config), engine, std::move(tokenizer), std::move(tpl)), acceptor(net::make_strand(ioc)) {}

  net::awaitable<void> accept_loop() {
    auto backoff = kMinAcceptBackoff;
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(net::make_strand(ioc), net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        if (!acceptor.is_open()) co_return;
        if (ec == net::error::connection_aborted) continue;  // the client gave up in the backlog
        if (ec.value() == EMFILE || ec.value() == ENFILE) refuse_without_fds();
        else log().warn("server: accept failed: {}", ec.message());
        // Pause accepting (never spin on a failing accept), longer while it keeps failing.
        net::steady_timer pause(acceptor.get_executor(), backoff);
        co_await pause.async_wait(net::redirect_error(net::use_awaitable, ec));
        backoff = std::min(backoff * 2, kMaxAcceptBackoff);
        continue;
      }
      backoff = kMinAcceptBackoff;
      if (ctx.connections.is_full()) {
        if (ctx.connections.evict_idle()) {
          ctx.metrics.record_connection_closed("idle_evicted");
        } else {
          ctx.metrics.record_connection_refused("max_connections");
          refuse_connection(socket.native_handle(), "the server has too many open connections; retry later");
          continue;  // the socket closes here
        }
      }
      auto ex = socket.get_executor();
      net::co_spawn(ex, run_session(std::move(socket), ctx), net::detached);
    }
  }

  // Out of file descriptors: give the spare one back, take each waiting connection in turn, answer
  // it with a 503 and close it, then keep the spare again, so clients are told instead of left
  // hanging in the backlog.
  void refuse_without_fds() {
    ctx.metrics.record_connection_refused("fd_limit");
    if (ctx.connections.evict_idle()) ctx.metrics.record_connection_closed("idle_evicted");
    log().warn("server: out of file descriptors with {} connections open", ctx.connections.size());
    if (spare_fd < 0) return;
    ::close(spare_fd);
    for (int i = 0; i < kMaxRefusedPerPause; ++i) {
      const int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) break;  // the backlog is empty (EAGAIN)
      if (i > 0) ctx.metrics.record_connection_refused("fd_limit");
      refuse_connection(fd, "the server is out of file descriptors; retry later");
      ::close(fd);
    }
    spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }

  ServerContext ctx;
  net::io_context ioc;
  tcp::acceptor acceptor;  // on its own strand: the accept loop and stop()'s close never overlap
  std::vector<std::thread> threads;
  int spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // see refuse_without_fds
  uint16_t port = 0;
  bool running = false;
};

Server::Server(ServerConfig config, EngineClient& engine, Tokenizer tokenizer, std::optional<ChatTemplate> chat_template)
    : impl_(std::make_unique<Impl>(std::move(config), engine, std::move(tokenizer),
                                   chat_template ? std::move(*chat_template)
                                                 : ChatTemplate(kDefaultChatTemplate, "default_chatml"))) {
  impl_->ctx.started_unix = int64_t(std::time(nullptr));
}

Server::~Server() {
  stop(std::chrono::milliseconds(0));
  if (impl_->spare_fd >= 0) ::close(impl_->spare_fd);
}

ServerContext& Server::context() { return impl_->ctx; }

uint16_t Server::port() const { return impl_->port; }

void Server::start() {
  Impl& s = *impl_;
  boost::system::error_code ec;
  auto address = net::ip::make_address(s.ctx.config.host, ec);
  if (ec) fail<InvalidArgument>("server: bad host address '{}': {}", s.ctx.config.host, ec.message());
  tcp::endpoint endpoint(address, s.ctx.config.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) fail<IoError>("server: cannot listen on {}:{}: {}", s.ctx.config.host, s.ctx.config.port, ec.message());
  s.port = s.acceptor.local_endpoint().port();
  net::co_spawn(s.acceptor.get_executor(), s.accept_loop(), net::detached);
  const int n = std::max(1, s.ctx.config.io_threads);
  for (int i = 0; i < n; ++i) s.threads.emplace_back([&s] { s.ioc.run(); });
  s.running = true;
  log().info("server: listening on {}:{} ({} I/O threads, model '{}')", s.ctx.config.host, s.port, n,
             s.ctx.config.served_model_name);
}

void Server::stop(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  if (!s.running) return;
  s.running = false;
  // Draining: the listener stays open so /health can answer 503 "draining" and new generation
  // requests get a 503 instead of a refused connection; in-flight requests get `grace`.
  s.ctx.draining = true;
  auto wait_idle = [&s](std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (s.ctx.active_requests.load() > 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  wait_idle(grace);
  net::post(s.acceptor.get_executor(), [&s] {
    boost::system::error_code ignored;
    s.acceptor.close(ignored);
  });
  s.ctx.abort_all = true;  // sessions notice within their wake tick and cancel in the engine
  wait_idle(std::chrono::seconds(2));
  s.ioc.stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
}

int run_server(const ServerConfig& config, EngineClient& engine, const Tokenizer& tokenizer,
               std::optional<ChatTemplate> chat_template) {
  // Block the signals in every thread (the I/O threads inherit the mask) and wait for them here.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  Server server(config, engine, tokenizer, std::move(chat_template));
  server.start();
  // Always printed (whatever the log level): scripts and tests read the bound port from it.
  std::fprintf(stderr, "lemma: listening on http://%s:%u\n", config.host.c_str(), static_cast<unsigned>(server.port()));
  std::fflush(stderr);
  int sig = 0;
  sigwait(&signals, &sig);
  log().info("server: signal {} received; draining for up to {} ms (send it again to exit now)", sig,
             config.shutdown_grace.count());
  // A second SIGINT/SIGTERM while draining: the operator wants out now.
  std::thread([signals] {
    int again = 0;
    sigwait(&signals, &again);
    std::fprintf(stderr, "lemma: signal %d received again while draining; exiting now\n", again);
    std::fflush(stderr);
    std::_Exit(128 + again);
  }).detach();
  server.stop(config.shutdown_grace);
  return 0;
}

}  // namespace lemma::server
