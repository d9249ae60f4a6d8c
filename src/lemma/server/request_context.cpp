#include "lemma/server/request_context.h"

#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/format.h>

namespace lemma::server {

namespace {
bool is_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}
bool all_zero(const std::string& s) { return s.find_first_not_of('0') == std::string::npos; }
}  // namespace

std::string random_hex(size_t digits) {
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   uint64_t(std::chrono::steady_clock::now().time_since_epoch().count())};
  std::string out;
  while (out.size() < digits) out += fmt::format("{:016x}", rng());
  out.resize(digits);
  return out;
}

std::string TraceContext::traceparent() const { return fmt::format("00-{}-{}-01", trace_id, span_id); }

std::optional<TraceContext> parse_traceparent(const std::string& h) {
  // version(2) - trace_id(32) - parent_id(16) - flags(2)
  if (h.size() < 55 || h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  std::string version = h.substr(0, 2), trace = h.substr(3, 32), parent = h.substr(36, 16), flags = h.substr(53, 2);
  if (!is_hex(version) || !is_hex(trace) || !is_hex(parent) || !is_hex(flags)) return std::nullopt;
  if (version == "ff" || (version == "00" && h.size() != 55) || all_zero(trace) || all_zero(parent)) return std::nullopt;
  return TraceContext{trace, random_hex(16), parent};
}

TraceContext make_trace(const std::string& incoming) {
  if (auto t = parse_traceparent(incoming)) return *t;
  return TraceContext{random_hex(32), random_hex(16), ""};
}

std::string AccessRecord::to_json_line() const {
  nlohmann::ordered_json j;
  auto now = std::chrono::system_clock::now();
  j["ts"] = std::chrono::duration<double>(now.time_since_epoch()).count();
  j["request_id"] = request_id;
  j["trace_id"] = trace_id;
  j["method"] = method;
  j["path"] = path;
  j["status"] = status;
  j["duration_ms"] = duration_ms;
  if (!remote.empty()) j["remote"] = remote;
  if (!user.empty()) j["user"] = user;
  if (!terminal.empty()) j["terminal"] = terminal;
  if (!finish_reason.empty()) j["finish_reason"] = finish_reason;
  if (prompt_tokens >= 0) j["prompt_tokens"] = prompt_tokens;
  if (completion_tokens >= 0) j["completion_tokens"] = completion_tokens;
  if (queue_ms >= 0) j["queue_ms"] = queue_ms;
  if (ttft_ms >= 0) j["ttft_ms"] = ttft_ms;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lemma::server
