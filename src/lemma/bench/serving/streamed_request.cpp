#include "lemma/bench/serving/streamed_request.h"

#include <cmath>

#include "lemma/bench/serving/http_exchange.h"
#include "lemma/bench/serving/sse_parser.h"
#include "lemma/bench/serving/stream_validator.h"

namespace lemma::bench::serving {

namespace {
using Clock = std::chrono::steady_clock;
constexpr size_t kErrorExcerpt = 200;  // bytes of a non-200 body quoted in the failure reason

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
}  // namespace

std::map<std::string, std::string> request_headers(const std::string& api_key) {
  std::map<std::string, std::string> headers;
  if (!api_key.empty()) headers["Authorization"] = "Bearer " + api_key;
  return headers;
}

boost::asio::awaitable<RequestOutcome> send_streamed_request(const RequestContext& context, const WorkItem& item) {
  HttpCall call;
  call.target = context.url.target(endpoint_route(context.shape.endpoint));
  call.host_header = context.url.host_header();
  call.body = request_body(context.shape, item.prompt, item.max_tokens);
  call.headers = request_headers(context.api_key);

  RequestOutcome out;
  out.prompt_tokens = std::llround(static_cast<double>(item.input_words) * context.tokens_per_word);
  const Clock::time_point sent = Clock::now();
  out.start_s = seconds_between(context.origin, sent);
  StreamValidator validator(context.shape.endpoint, context.shape.include_usage);
  SseParser sse([&](const std::string& payload) { validator.on_payload(payload, seconds_between(sent, Clock::now())); });
  HttpHead head;
  std::string error_body;
  const auto deadline = sent + std::chrono::duration_cast<Clock::duration>(context.timeout);
  std::string transport = co_await http_exchange(
      context.endpoints, call, deadline, [&](const HttpHead& h) { head = h; },
      [&](std::string_view bytes) {
        if (head.status != 200) {
          if (error_body.size() < kErrorExcerpt) error_body.append(bytes.substr(0, kErrorExcerpt - error_body.size()));
        } else if (head.content_type.find("text/event-stream") != std::string::npos) {
          sse.feed(bytes);
        }
      });
  const double end_s = seconds_between(sent, Clock::now());
  if (transport.empty() && head.status != 200) {
    transport = "HTTP " + std::to_string(head.status) + ": " + error_body;
  } else if (transport.empty() && head.content_type.find("text/event-stream") == std::string::npos) {
    transport = "a response that is not text/event-stream (Content-Type \"" + head.content_type + "\")";
  } else if (transport.empty() && sse.has_partial_event()) {
    transport = "the stream ended in the middle of an event";
  }
  validator.finish(end_s, transport, out);
  co_return out;
}

}  // namespace lemma::bench::serving
