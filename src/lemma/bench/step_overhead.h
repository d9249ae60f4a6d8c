// Per-step framework overhead from trace ranges (issue 5's goal: under 3% of step time at batch 1):
// for each range named `step_name` on a thread, the time not covered by that thread's outermost
// "kernel" ranges inside it (matmuls, attention, norms, RoPE, lm_head, ...): validation, batch and
// slice building, embedding lookup, buffer checks, matmul planning (none when a captured decode
// plan is replayed, G15) and the glue between kernels. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "lemma/base/trace.h"

namespace lemma::bench {

struct StepOverhead {
  int64_t steps = 0;
  double step_ms = 0.0;      // mean wall time of one step
  double kernel_ms = 0.0;    // mean time inside kernel ranges per step
  double overhead_ms = 0.0;  // step_ms - kernel_ms
  double overhead_fraction() const { return step_ms > 0 ? overhead_ms / step_ms : 0.0; }
};

// `events` in any order (e.g. trace::thread_events_since()); kernel ranges nested in other kernel
// ranges count once.
StepOverhead step_overhead(std::span<const trace::Event> events, const char* step_name);

}  // namespace lemma::bench
