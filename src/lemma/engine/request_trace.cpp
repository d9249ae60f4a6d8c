#include "lemma/engine/request_trace.h"

#include "lemma/base/trace.h"

namespace lemma {

namespace {
constexpr const char* kCategory = "request";
}

void RequestTrace::added(RequestId id) {
  if (trace::enabled()) live_[id].added = trace::now_ns();
}

void RequestTrace::scheduled(RequestId id) {
  if (live_.empty()) return;
  auto it = live_.find(id);
  if (it != live_.end() && it->second.scheduled == 0) it->second.scheduled = trace::now_ns();
}

void RequestTrace::produced(const RequestOutput& output) {
  if (live_.empty()) return;
  auto it = live_.find(output.id);
  if (it == live_.end()) return;
  if (it->second.first_token == 0 && !output.new_token_ids.empty()) it->second.first_token = trace::now_ns();
  if (output.finished()) finished(output.id);
}

void RequestTrace::finished(RequestId id) {
  if (live_.empty()) return;
  auto it = live_.find(id);
  if (it == live_.end()) return;
  const Times t = it->second;
  live_.erase(it);
  const uint64_t end = trace::now_ns();
  const auto track = static_cast<int64_t>(id);
  const auto range = [&](const char* name, uint64_t from, uint64_t to) {
    trace::record_on_track(track, "request", name, kCategory, from, to, "request", track);
  };
  range("request", t.added, end);
  // Each phase ends where the next starts; a request cancelled early has only its first phases.
  range("queued", t.added, t.scheduled != 0 ? t.scheduled : end);
  if (t.scheduled != 0) range("prefill", t.scheduled, t.first_token != 0 ? t.first_token : end);
  if (t.first_token != 0) range("decode", t.first_token, end);
  range("finished", end, end);
}

}  // namespace lemma
