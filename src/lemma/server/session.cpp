#include "lemma/server/session.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <mutex>
#include <optional>
#include <string_view>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "lemma/base/logging.h"
#include "lemma/server/anthropic_response.h"
#include "lemma/server/auth.h"
#include "lemma/server/cors.h"
#include "lemma/server/handlers.h"
#include "lemma/server/request_context.h"
#include "lemma/server/web_ui.h"

namespace lemma::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using net::use_awaitable;

namespace {

constexpr auto kWakeTick = std::chrono::milliseconds(200);  // re-check deadlines and shutdown
constexpr uint32_t kHeaderLimit = 64 * 1024;                // larger request headers get 431
constexpr int kMaxUnsentBytes = 256 * 1024;                 // per connection, in the kernel

// Wakes a generation loop from the engine thread. `alive` is read and written only on the strand,
// except through `mu`, which guards the posting itself so nothing is posted after the session ended.
struct Waker {
  std::mutex mu;
  bool alive = true;          // guarded by mu
  net::steady_timer timer;
  net::steady_timer stall_timer;  // a streamed write that does not finish in time: the reader stopped
  beast::tcp_stream* stream;  // valid while alive (checked on the strand)
  std::shared_ptr<OutputBuffer> buffer;
  bool writing = false;       // strand only
  bool cut = false;           // strand only: the connection was dropped for a reader that stopped reading
  Waker(net::any_io_executor ex, beast::tcp_stream* s, std::shared_ptr<OutputBuffer> b)
      : timer(ex), stall_timer(ex), stream(s), buffer(std::move(b)) {}
};

// Drops a connection at once: a zero linger makes close() discard what the kernel still queues for
// a client that stopped reading (a reset instead of a FIN behind megabytes of unread data).
void drop_connection(beast::tcp_stream& stream) {
  beast::error_code ignored;
  if (!stream.socket().is_open()) return;
  stream.socket().set_option(net::socket_base::linger(true, 0), ignored);
  stream.socket().close(ignored);
}

// Watches a generation request's socket for the client going away (EOF or error) while the
// server is busy generating; pipelined data ends the watch without consuming anything.
struct DisconnectWatch {
  bool disconnected = false;
};

void watch_disconnect(beast::tcp_stream& stream, std::shared_ptr<DisconnectWatch> watch, std::shared_ptr<Waker> waker) {
  stream.socket().async_wait(net::ip::tcp::socket::wait_read, [&stream, watch, waker](beast::error_code ec) {
    if (ec == net::error::operation_aborted) return;
    std::lock_guard lock(waker->mu);
    if (!waker->alive) return;
    if (!ec) {
      char byte;
      ssize_t n = ::recv(stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) return;  // data, not EOF
    }
    watch->disconnected = true;
    waker->timer.cancel();
  });
}

HttpRequest to_request(const http::request<http::string_body>& req, const beast::tcp_stream& stream) {
  HttpRequest r;
  r.method = std::string(req.method_string());
  std::string target(req.target());
  r.target = target.substr(0, target.find('?'));
  for (const auto& field : req) {
    std::string name(field.name_string());
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(field.value());
  }
  r.body = req.body();
  beast::error_code ec;
  auto ep = stream.socket().remote_endpoint(ec);
  if (!ec) r.remote = ep.address().to_string();
  return r;
}

void set_common_headers(http::fields& f, const std::string& request_id, const TraceContext& trace) {
  f.set(http::field::server, "lemma");
  f.set("x-request-id", request_id);
  f.set("traceparent", trace.traceparent());
}

// `head_only`: the answer to HEAD, with the Content-Length the GET would have and no body.
net::awaitable<beast::error_code> write_response(beast::tcp_stream& stream, const HttpResponse& r, bool keep_alive,
                                                 unsigned version, const std::string& request_id,
                                                 const TraceContext& trace, bool head_only = false) {
  beast::error_code ec;
  auto fill = [&](auto& res) {
    set_common_headers(res, request_id, trace);
    res.set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.keep_alive(keep_alive);
  };
  if (head_only) {
    http::response<http::empty_body> res{static_cast<http::status>(r.status), version};
    fill(res);
    res.content_length(r.body.size());
    http::response_serializer<http::empty_body> serializer(res);
    co_await http::async_write_header(stream, serializer, net::redirect_error(use_awaitable, ec));
    co_return ec;
  }
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  fill(res);
  res.body() = r.body;
  res.prepare_payload();
  co_await http::async_write(stream, res, net::redirect_error(use_awaitable, ec));
  co_return ec;
}

// The answer to a generation request that meets a drain (Server::stop).
HttpResponse shutting_down_response(const ServerContext& ctx) {
  HttpResponse r = error_response(ApiError(503, "the server is shutting down", std::nullopt, "shutting_down"));
  r.headers.emplace_back("Retry-After", std::to_string(ctx.config.retry_after_seconds));
  return r;
}

struct Outcome {
  HttpResponse response;          // used when !streamed
  bool streamed = false;          // the response was already written (SSE)
  bool close = false;             // the connection must close
  bool counted_active = false;    // counted in ctx.active_requests
  std::string terminal, finish;
  int64_t prompt_tokens = -1, completion_tokens = -1;
  double ttft_ms = -1.0, queue_ms = -1.0;
};

// Drives one generation request to its single terminal state.
net::awaitable<Outcome> run_generation(beast::tcp_stream& stream, CompletionCall& call, ServerContext& ctx,
                                       Clock::time_point arrival, unsigned version, const std::string& request_id,
                                       const TraceContext& trace, const HeaderList& extra_headers) {
  Outcome out;
  auto buffer = call.buffer();
  auto waker = std::make_shared<Waker>(stream.get_executor(), &stream, buffer);
  auto ex = stream.get_executor();
  buffer->set_notify([waker, ex] {
    std::lock_guard lock(waker->mu);
    if (!waker->alive) return;
    net::post(ex, [waker] {
      std::lock_guard lock(waker->mu);
      if (!waker->alive) return;
      waker->timer.cancel();
      // A slow reader blocks the write while the engine overflows the buffer: cut the stream.
      if (waker->writing && waker->buffer->overflowed()) {
        waker->cut = true;
        drop_connection(*waker->stream);
      }
    });
  });
  // However this coroutine ends (even destroyed mid-wait at shutdown), nothing is posted to it
  // later, and a submitted request left without a terminal state (its connection failed early,
  // or the coroutine was destroyed) is cancelled, so the engine never keeps it.
  struct Detach {
    std::shared_ptr<Waker> waker;
    CompletionCall& call;
    EngineClient& engine;
    bool submitted = false;
    ~Detach() {
      {
        std::lock_guard lock(waker->mu);
        waker->alive = false;
      }
      waker->buffer->close();
      if (!submitted) return;
      if (call.terminal() == Terminal::kNone) call.abort(Terminal::kCancelled, "the connection ended");
      if (call.take_engine_cancel()) engine.cancel(call.id());
    }
  } detach{waker, call, ctx.engine};
  // Counted before the engine sees the request, then the drain flag read again: stop() sets the flag
  // before it reads the count (both sequentially consistent), so either it waits for this request
  // or this request sees the drain and is refused. Counted after submit, a request could reach the
  // engine unseen by a drain and be cancelled as if the grace time were over.
  ctx.active_requests.fetch_add(1);
  out.counted_active = true;  // run_session decrements after the response is written
  if (ctx.draining) {
    out.response = shutting_down_response(ctx);
    out.terminal = "rejected";
    co_return out;
  }
  if (!ctx.engine.submit(call.engine_request(), buffer)) {
    ctx.metrics.record_rejected();
    out.response.status = 429;
    out.response.body = error_body(429, "the engine's queue is full; retry later", "", std::string("queue_full"));
    out.response.headers.emplace_back("Retry-After", std::to_string(ctx.config.retry_after_seconds));
    out.terminal = "rejected";
    co_return out;
  }
  detach.submitted = true;
  auto watch = std::make_shared<DisconnectWatch>();
  watch_disconnect(stream, watch, waker);
  const auto deadline = arrival + ctx.config.request_timeout;
  const std::string& id = call.id();

  beast::error_code ec;
  // HTTP/1.0 has no chunked encoding: the stream is close-delimited there.
  const bool chunked = version >= 11;
  std::unique_ptr<http::response<http::empty_body>> head;
  std::unique_ptr<http::response_serializer<http::empty_body>> serializer;
  if (call.streaming()) {
    head = std::make_unique<http::response<http::empty_body>>(http::status::ok, version);
    set_common_headers(*head, request_id, trace);
    head->set(http::field::content_type, "text/event-stream");
    head->set(http::field::cache_control, "no-cache");
    for (const auto& [k, v] : extra_headers) head->set(k, v);
    head->keep_alive(chunked);
    if (chunked) head->chunked(true);
    serializer = std::make_unique<http::response_serializer<http::empty_body>>(*head);
    stream.expires_at(std::chrono::steady_clock::time_point(deadline));
    co_await http::async_write_header(stream, *serializer, net::redirect_error(use_awaitable, ec));
    stream.expires_never();
    out.streamed = true;
  }
  // One streamed write; a reader that takes none of it for stalled_write_timeout is dropped.
  auto write_frames = [&](std::string data) -> net::awaitable<beast::error_code> {
    beast::error_code wec;
    waker->writing = true;
    waker->stall_timer.expires_at(std::min(Clock::now() + ctx.config.stalled_write_timeout,
                                           deadline + std::chrono::seconds(1)));
    waker->stall_timer.async_wait([waker](beast::error_code tec) {
      if (tec) return;
      std::lock_guard lock(waker->mu);
      if (!waker->alive || !waker->writing) return;
      waker->cut = true;
      drop_connection(*waker->stream);
    });
    if (chunked) {
      co_await net::async_write(stream, http::make_chunk(net::buffer(data)), net::redirect_error(use_awaitable, wec));
    } else {
      co_await net::async_write(stream, net::buffer(data), net::redirect_error(use_awaitable, wec));
    }
    waker->writing = false;
    waker->stall_timer.cancel();
    co_return wec;
  };
  std::string frames;
  while (!ec) {
    frames += call.poll();
    if (call.terminal() == Terminal::kNone) {
      if (watch->disconnected) {
        call.abort(Terminal::kCancelled, "the client disconnected");
        frames.clear();
        ec = net::error::connection_reset;
      } else if (ctx.abort_all) {
        frames += call.abort(Terminal::kCancelled, "the server is shutting down");
      } else if (Clock::now() >= deadline) {
        frames += call.abort(Terminal::kTimedOut, fmt::format("the request timed out after {} ms",
                                                              ctx.config.request_timeout.count()));
      }
    }
    if (call.take_engine_cancel()) ctx.engine.cancel(id);
    if (call.terminal() == Terminal::kOverflow) {
      // The reader fell too far behind: its error event and [DONE] go out only if the socket takes
      // them within a second; either way the connection is dropped.
      if (call.streaming()) {
        stream.expires_after(std::chrono::seconds(1));
        beast::error_code fec;
        if (chunked) {
          co_await net::async_write(stream, http::make_chunk(net::buffer(frames)), net::redirect_error(use_awaitable, fec));
          if (!fec) co_await net::async_write(stream, http::make_chunk_last(), net::redirect_error(use_awaitable, fec));
        } else {
          co_await net::async_write(stream, net::buffer(frames), net::redirect_error(use_awaitable, fec));
        }
        stream.expires_never();
      }
      waker->cut = true;
      ec = net::error::connection_reset;
    }
    if (ec) break;
    if (call.streaming() && !frames.empty()) {
      ec = co_await write_frames(std::move(frames));
      frames.clear();
      if (ec) {
        if (buffer->overflowed()) frames += call.poll();  // becomes kOverflow
        if (waker->cut) call.abort(Terminal::kOverflow, "the client stopped reading the stream");
        call.abort(Terminal::kCancelled, "the client disconnected");
        if (call.take_engine_cancel()) ctx.engine.cancel(id);
        break;
      }
    }
    if (call.terminal() != Terminal::kNone) break;
    waker->timer.expires_at(std::min(deadline, Clock::now() + kWakeTick));
    beast::error_code wait_ec;
    co_await waker->timer.async_wait(net::redirect_error(use_awaitable, wait_ec));
  }
  if (call.terminal() == Terminal::kNone) call.abort(Terminal::kCancelled, "the client disconnected");
  if (call.take_engine_cancel()) ctx.engine.cancel(id);
  if (call.streaming() && !ec && chunked) {
    co_await net::async_write(stream, http::make_chunk_last(), net::redirect_error(use_awaitable, ec));
  }
  if (waker->cut) drop_connection(stream);
  if (call.streaming() && !chunked) ec = net::error::eof;  // the close ends an HTTP/1.0 stream
  beast::error_code ignored;
  if (stream.socket().is_open()) stream.socket().cancel(ignored);  // the disconnect watch
  out.close = bool(ec);
  out.terminal = terminal_name(call.terminal());
  out.finish = call.finish_label();
  Usage u = call.usage();
  out.prompt_tokens = u.prompt_tokens;
  out.ttft_ms = call.ttft_seconds() * 1e3;
  out.queue_ms = call.queue_seconds() * 1e3;
  out.completion_tokens = u.completion_tokens;
  if (!call.streaming()) out.response = call.response();
  co_return out;
}

// Runs an embeddings call: every input submitted to the engine, then their vectors awaited (polled:
// one final delta per input) until the deadline; inputs left unfinished are cancelled however the
// coroutine ends.
net::awaitable<HttpResponse> run_embeddings(beast::tcp_stream& stream, EmbeddingCall& call, ServerContext& ctx,
                                            Clock::time_point arrival) {
  struct Active {  // counted like a generation, so a drain waits for it
    ServerContext& ctx;
    EmbeddingCall& call;
    size_t submitted = 0;
    explicit Active(ServerContext& c, EmbeddingCall& e) : ctx(c), call(e) { ctx.active_requests.fetch_add(1); }
    ~Active() {
      if (submitted > 0)
        for (const std::string& id : call.unfinished_ids()) ctx.engine.cancel(id);
      ctx.active_requests.fetch_sub(1);
    }
  } active(ctx, call);
  if (ctx.draining) co_return shutting_down_response(ctx);
  for (size_t i = 0; i < call.size(); ++i) {
    if (!ctx.engine.submit(call.engine_request(i), call.buffer(i))) {
      ctx.metrics.record_rejected();
      call.fail(429, "the engine's queue is full; retry later");
      HttpResponse r = call.response();
      r.headers.emplace_back("Retry-After", std::to_string(ctx.config.retry_after_seconds));
      co_return r;  // (the submitted ones are cancelled by `active`)
    }
    active.submitted = i + 1;
  }
  const auto deadline = arrival + ctx.config.request_timeout;
  net::steady_timer timer(stream.get_executor());
  while (!call.poll()) {
    if (Clock::now() >= deadline) {
      call.fail(504, fmt::format("the request timed out after {} ms", ctx.config.request_timeout.count()));
      break;
    }
    if (ctx.abort_all) {
      call.fail(503, "the server is shutting down");
      break;
    }
    timer.expires_after(std::chrono::milliseconds(2));
    beast::error_code ec;
    co_await timer.async_wait(net::redirect_error(use_awaitable, ec));
  }
  co_return call.response();
}

// After refusing a request whose body we did not read: stop sending, then discard what the
// client still sends (bounded in time) so closing does not reset the answer away.
net::awaitable<void> drain_and_close(beast::tcp_stream& stream) {
  beast::error_code ec;
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  stream.expires_after(std::chrono::seconds(2));
  std::vector<char> scratch(64 * 1024);
  while (!ec) {
    co_await stream.async_read_some(net::buffer(scratch), net::redirect_error(use_awaitable, ec));
  }
  beast::error_code ignored;
  stream.socket().close(ignored);
}

// The connection's state shared with its ConnectionTable closer (strand only).
struct ConnectionState {
  beast::tcp_stream* stream;
  bool alive = true;  // false once run_session returned
  bool idle = false;  // waiting for the next keep-alive request: may be evicted
};

using RequestParser = http::request_parser<http::string_body>;

// Reads one request. A keep-alive connection may wait idle_timeout for the next request's first
// byte (evictable meanwhile); from then on (or from accept) the whole header must arrive within
// header_timeout, and the body within idle_timeout. Answers Expect: 100-continue before the body.
// Returns an error the caller answers (see answer_read_error) or that ends the connection.
net::awaitable<beast::error_code> read_request(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                               RequestParser& parser, ServerContext& ctx, ConnectionState& state,
                                               ConnectionTable::Lease& lease, bool first) {
  beast::error_code ec;
  if (!first && buffer.size() == 0) {
    state.idle = true;
    lease.set_idle(true);
    stream.expires_after(ctx.config.idle_timeout);
    const size_t n = co_await stream.async_read_some(buffer.prepare(4096), net::redirect_error(use_awaitable, ec));
    buffer.commit(n);
    state.idle = false;
    lease.set_idle(false);
    if (ec) co_return ec;
  }
  stream.expires_after(ctx.config.header_timeout);
  co_await http::async_read_header(stream, buffer, parser, net::redirect_error(use_awaitable, ec));
  if (ec == beast::error::timeout) ctx.metrics.record_connection_closed("header_timeout");
  if (!ec && !parser.is_done()) {
    const auto expect = parser.get()[http::field::expect];
    if (beast::iequals(expect, "100-continue") && parser.get().version() >= 11) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      stream.expires_after(ctx.config.header_timeout);
      co_await net::async_write(stream, net::buffer(kContinue), net::redirect_error(use_awaitable, ec));
    }
    stream.expires_after(ctx.config.idle_timeout);
    if (!ec) co_await http::async_read(stream, buffer, parser, net::redirect_error(use_awaitable, ec));
  }
  stream.expires_never();
  co_return ec;
}

// The answer to a request that could not be read, or nullopt when there is nobody to answer
// (closed, timed out, reset).
std::optional<ApiError> read_error_answer(const beast::error_code& ec, const ServerConfig& config) {
  if (ec == http::error::body_limit) {
    return ApiError(413, fmt::format("the request is larger than the server's limit of {} bytes", config.max_request_bytes),
                    std::nullopt, "request_too_large");
  }
  if (ec == http::error::header_limit) {
    return ApiError(431, fmt::format("the request's header is larger than the server's limit of {} bytes", kHeaderLimit),
                    std::nullopt, "header_too_large");
  }
  if (ec.category() == http::make_error_code(http::error::bad_method).category() && ec != http::error::end_of_stream &&
      ec != http::error::partial_message) {
    return ApiError(400, "malformed HTTP request: " + ec.message(), std::nullopt, "bad_request");
  }
  return std::nullopt;
}

// Headers whose repetition would let a proxy and this server read one request two ways.
void reject_duplicate_headers(const http::request<http::string_body>& req) {
  for (const auto field : {http::field::authorization, http::field::host, http::field::content_type}) {
    if (req.count(field) > 1) {
      throw ApiError(400, fmt::format("the request has {} {} headers; send one", req.count(field),
                                      std::string(http::to_string(field))),
                     std::nullopt, "duplicate_header");
    }
  }
  if (req.count("x-api-key") > 1) {
    throw ApiError(400, fmt::format("the request has {} x-api-key headers; send one", req.count("x-api-key")),
                   std::nullopt, "duplicate_header");
  }
}

// The prefix of a generation's id: OpenAI's and Anthropic's forms.
std::string call_id_prefix(Route route) {
  switch (route) {
    case Route::kChat: return "chatcmpl-";
    case Route::kResponses: return "resp_";
    case Route::kMessages: return "msg_";
    default: return "cmpl-";
  }
}

void write_access_log(ServerContext& ctx, AccessRecord& rec, Clock::time_point arrival) {
  rec.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - arrival).count();
  std::string line = rec.to_json_line();
  if (ctx.config.access_log) {
    ctx.config.access_log(line);
  } else {
    log().info("{}", line);
  }
}

}  // namespace

net::awaitable<void> run_session(net::ip::tcp::socket socket, ServerContext& ctx) {
  // Writes wait once this much is queued unsent in the kernel, so a reader that stops reading is
  // seen as a stalled write within stalled_write_timeout, not after megabytes of send buffer.
  const int unsent_limit = kMaxUnsentBytes;
  ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_NOTSENT_LOWAT, &unsent_limit, sizeof unsent_limit);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer read_buffer;
  auto state = std::make_shared<ConnectionState>(ConnectionState{&stream});
  struct EndGuard {  // however the session ends, the table's closer no longer touches the stream
    std::shared_ptr<ConnectionState> state;
    ~EndGuard() { state->alive = false; }
  } end_guard{state};
  auto lease = ctx.connections.open([state, ex = stream.get_executor()] {
    net::post(ex, [state] {
      if (!state->alive || !state->idle) return;  // busy again: it keeps its place
      beast::error_code ignored;
      state->stream->socket().close(ignored);
    });
  });
  ctx.metrics.set_open_connections(int64_t(ctx.connections.size()));
  for (bool first = true;; first = false) {
    RequestParser parser;
    parser.body_limit(ctx.config.max_request_bytes);
    parser.header_limit(kHeaderLimit);
    beast::error_code ec = co_await read_request(stream, read_buffer, parser, ctx, *state, *lease, first);
    const auto arrival = Clock::now();
    const std::string request_id = "req-" + random_hex(24);
    TraceContext trace = make_trace("");
    if (ec) {
      if (auto answer = read_error_answer(ec, ctx.config)) {
        co_await write_response(stream, error_response(*answer), false, 11, request_id, trace);
        ctx.metrics.record_http("other", answer->status());
        co_await drain_and_close(stream);
      }
      break;  // closed, timed out, evicted: nothing to answer
    }
    const auto expect = parser.get()[http::field::expect];
    if (!expect.empty() && !beast::iequals(expect, "100-continue")) {
      ApiError e(417, "the server only honours \"Expect: 100-continue\"", std::nullopt, "expectation_failed");
      co_await write_response(stream, error_response(e), false, parser.get().version(), request_id, trace);
      ctx.metrics.record_http("other", 417);
      co_await drain_and_close(stream);
      break;
    }
    http::request<http::string_body> req = parser.release();
    HttpRequest request = to_request(req, stream);
    trace = make_trace(request.header("traceparent"));
    RouteMatch route = match_route(request.method, request.target);
    const bool generation = is_generation_route(route.route);
    const HeaderList cors = cors_headers(ctx.config.allowed_origins, request.header("origin"));
    Outcome outcome;
    AccessRecord rec;
    rec.request_id = request_id;
    rec.trace_id = trace.trace_id;
    rec.method = request.method;
    rec.path = request.target;
    rec.remote = request.remote;
    std::unique_ptr<CompletionCall> call;
    std::unique_ptr<EmbeddingCall> embedding;
    try {
      reject_duplicate_headers(req);
      std::optional<HttpResponse> page;  // the web chat's files: public, no API key
      if (is_cors_preflight(ctx.config.allowed_origins, request)) {
        outcome.response = cors_preflight_response(ctx.config.allowed_origins, request);
      } else if (route.route == Route::kNotFound && (page = web_ui_response(request))) {
        route.label = "webui";
        outcome.response = std::move(*page);
      } else if (route.route == Route::kNotFound) {
        throw ApiError(404, "no route for " + request.method + " " + request.target, std::nullopt, "not_found");
      } else if (route.route == Route::kMethodNotAllowed) {
        ApiError e(405, "method " + request.method + " is not allowed on " + request.target + "; use " + route.allow,
                   std::nullopt, "method_not_allowed");
        outcome.response = error_response(e);
        outcome.response.headers.emplace_back("Allow", route.allow);
      } else if (route_needs_auth(route.route) && !is_authorized(request, ctx.config.api_key)) {
        throw ApiError(401, "invalid or missing API key (send Authorization: Bearer <key> or x-api-key: <key>)", std::nullopt,
                       "invalid_api_key");
      } else if (generation && ctx.draining) {
        outcome.response = shutting_down_response(ctx);
      } else if (route.route == Route::kEmbeddings && ctx.draining) {
        outcome.response = shutting_down_response(ctx);
      } else if (route.route == Route::kEmbeddings) {
        rec.request_id = "embd-" + request_id.substr(4);
        embedding = start_embeddings(request, ctx, rec.request_id);
      } else if (generation) {
        std::string call_id = call_id_prefix(route.route) + request_id.substr(4);
        call = start_completion(route, request, ctx, call_id, arrival);
        rec.request_id = call_id;
      } else {
        outcome.response = handle_info(route, request, ctx);
      }
    } catch (const ApiError& e) {
      outcome.response = error_response(e);
      if (e.status() == 401) outcome.response.headers.emplace_back("WWW-Authenticate", "Bearer");
    } catch (const std::exception& e) {
      outcome.response = error_response(ApiError(500, std::string("internal error: ") + e.what()));
    }
    if (call) {
      try {
        auto request_json = nlohmann::json::parse(request.body, nullptr, false);
        if (request_json.is_object() && request_json.contains("user") && request_json["user"].is_string()) {
          rec.user = request_json["user"].get<std::string>();
        }
      } catch (...) {
      }
      outcome = co_await run_generation(stream, *call, ctx, arrival, req.version(), rec.request_id, trace, cors);
      rec.terminal = outcome.terminal;
      rec.finish_reason = outcome.finish;
      rec.prompt_tokens = outcome.prompt_tokens;
      rec.completion_tokens = outcome.completion_tokens;
      rec.ttft_ms = outcome.ttft_ms;
      rec.queue_ms = outcome.queue_ms;
    }
    if (embedding) {
      outcome.response = co_await run_embeddings(stream, *embedding, ctx, arrival);
      rec.prompt_tokens = embedding->prompt_tokens();
    }
    bool keep_alive = req.keep_alive() && !outcome.close && !ctx.draining;
    rec.status = outcome.streamed || outcome.close ? (outcome.streamed ? 200 : 499) : outcome.response.status;
    ctx.metrics.record_http(route.label, rec.status);  // before the answer: a client may scrape right after
    if (!outcome.streamed && !outcome.close) {
      if (route.route == Route::kMessages) outcome.response = to_anthropic_error(std::move(outcome.response));
      for (const auto& header : cors) outcome.response.headers.push_back(header);
      ec = co_await write_response(stream, outcome.response, keep_alive, req.version(), rec.request_id, trace,
                                   req.method() == http::verb::head);
      if (ec) keep_alive = false;
    }
    if (outcome.counted_active) ctx.active_requests.fetch_sub(1);
    write_access_log(ctx, rec, arrival);
    if (!keep_alive) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  stream.socket().close(ignored);
  lease.reset();
  ctx.metrics.set_open_connections(int64_t(ctx.connections.size()));
}

}  // namespace lemma::server
