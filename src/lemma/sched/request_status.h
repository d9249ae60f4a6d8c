// RequestStatus: the one lifecycle enum of a request. Live states come first; every finished state
// sorts after them, so `status >= kFinishedStopped` means finished. One table (request_status.cpp)
// names each state and its OpenAI finish reason; every layer (engine, server deltas, `lemma
// generate`) says why a request ended with this enum and names it through that table.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace lemma {

enum class RequestStatus : uint8_t {
  kWaiting,            // queued, never admitted
  kRunning,            // admitted: holds KV blocks, gets tokens each step
  kPreempted,          // preempted by recompute: blocks freed, num_computed_tokens = 0, queued again
  kSwapped,            // preempted by swap: blocks in the host tier, queued again
  kFinishedStopped,    // stop token, EOS or stop string
  kFinishedLength,     // max_tokens or the context limit
  kFinishedCancelled,  // the client went away or asked to abort
  kFinishedTimeout,    // the per-request deadline passed
  kFinishedFailed,     // an error while serving it
};

constexpr bool is_finished(RequestStatus s) { return s >= RequestStatus::kFinishedStopped; }

// "waiting", "running", ..., "finished_failed".
std::string_view to_string(RequestStatus s);

// The OpenAI `finish_reason` of a finished state: stop, length, abort (cancelled / timed out) or
// error; empty for live states.
std::string_view finish_reason(RequestStatus s);

}  // namespace lemma
