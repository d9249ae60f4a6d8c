#include "lemma/sched/stop_conditions.h"

#include <algorithm>

namespace lemma {

std::optional<RequestStatus> check_stop(const StopConditions& stop, std::span<const int32_t> output_token_ids,
                                        int64_t num_tokens, int64_t max_model_len) {
  if (output_token_ids.empty()) return std::nullopt;
  const int32_t last = output_token_ids.back();
  const auto num_outputs = static_cast<int64_t>(output_token_ids.size());
  if (num_outputs >= stop.min_tokens) {
    if (!stop.ignore_eos && stop.eos_token_id >= 0 && last == stop.eos_token_id) return RequestStatus::kFinishedStopped;
    if (std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), last) != stop.stop_token_ids.end())
      return RequestStatus::kFinishedStopped;
  }
  if (num_outputs >= stop.max_tokens || num_tokens >= max_model_len) return RequestStatus::kFinishedLength;
  return std::nullopt;
}

}  // namespace lemma
