// RequestTrace: the phases of each request for the trace (G5): queued (added -> first scheduled),
// prefill (first scheduled -> first output token), decode (first token -> end), all inside one
// "request" range, on the request's own track (one row per request id in Perfetto). Records only
// while tracing is on; each method is one relaxed load otherwise. Single-threaded (the engine's).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "lemma/sched/step_plan.h"

namespace lemma {

class RequestTrace {
 public:
  void added(RequestId id);
  void scheduled(RequestId id);
  // After a step: `output` carries the request's new tokens and status.
  void produced(const RequestOutput& output);
  // Writes the request's ranges and forgets it (also for aborts).
  void finished(RequestId id);

 private:
  struct Times {
    uint64_t added = 0, scheduled = 0, first_token = 0;
  };
  std::unordered_map<RequestId, Times> live_;
};

}  // namespace lemma
