// StopConditions: when a request's generation ends, as plain data (max_tokens, stop token ids, EOS
// unless ignore_eos, min_tokens). Stop strings need the detokenizer: the engine applies them and calls
// Scheduler::abort(id, kFinishedStopped). Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "lemma/sched/request_status.h"

namespace lemma {

struct StopConditions {
  int64_t max_tokens = 16;              // output tokens
  int64_t min_tokens = 0;               // stop tokens and EOS do not count before this many outputs
  std::vector<int32_t> stop_token_ids;  // generation stops after emitting one of these
  int32_t eos_token_id = -1;            // < 0: none
  bool ignore_eos = false;
};

// The finished state after `output_token_ids` (non-empty; the last one just appended), or nullopt to
// continue. num_tokens: prompt + output tokens; reaching max_model_len finishes with kFinishedLength.
std::optional<RequestStatus> check_stop(const StopConditions& stop, std::span<const int32_t> output_token_ids,
                                        int64_t num_tokens, int64_t max_model_len);

}  // namespace lemma
