// Per-request identity and tracing: a request id, and the W3C trace context (an incoming
// `traceparent` is continued, else a new trace id is made), plus the one-line JSON access log.
// Functions are thread-safe (the id generator is a thread-local PRNG).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lemma::server {

struct TraceContext {
  std::string trace_id;  // 32 lower-case hex digits
  std::string span_id;   // 16 hex digits: this server's span for the request
  std::string parent_span_id;  // from the incoming traceparent, or empty
  // "00-<trace_id>-<span_id>-01", echoed in the response's traceparent header.
  std::string traceparent() const;
};

// Parses a W3C traceparent ("00-<32 hex>-<16 hex>-<2 hex>", ids not all zero); nullopt if invalid.
std::optional<TraceContext> parse_traceparent(const std::string& header);
// Continues `incoming_header` when valid, else starts a new trace.
TraceContext make_trace(const std::string& incoming_header);

std::string random_hex(size_t digits);

// One access-log record; `to_json_line` is one line without a trailing newline.
struct AccessRecord {
  std::string request_id, trace_id, method, path, remote, user, terminal, finish_reason;
  int status = 0;
  double duration_ms = 0.0, ttft_ms = -1.0, queue_ms = -1.0;
  int64_t prompt_tokens = -1, completion_tokens = -1;
  std::string to_json_line() const;
};

}  // namespace lemma::server
