// OutputSnapshot: a copy of a request's choices taken under the engine's lock, so the binding can
// turn it into Python objects after letting go of the lock (and with the GIL held). Either the
// whole of each choice (generate) or what is new since a streaming reader's last look (deltas).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "offline_engine.h"

namespace lemma::python {

struct ChoiceSnapshot {
  int index = 0;
  std::string text = {};
  std::vector<int32_t> token_ids = {};
  std::vector<SampleResult> logprobs = {};      // parallel to token_ids when logprobs were asked for
  std::optional<double> cumulative_logprob = {};  // the whole choice's so far
  bool logprobs_requested = false;
  std::optional<RequestStatus> finished = {};   // set once the choice has ended
  std::string error = {};                       // why it failed (kFinishedFailed)
  std::optional<std::string> stop_string = {};  // what stopped it (CompletionState::stop_string)
  std::optional<int32_t> stop_token = {};
};

struct OutputSnapshot {
  std::vector<int32_t> prompt_token_ids = {};
  std::vector<ChoiceSnapshot> choices = {};
  bool finished = false;  // every choice has ended
};

// Every choice in full.
OutputSnapshot full_snapshot(const OfflineRequest& request);
// What each choice gained since the last delta (text, tokens, logprobs, and its end the first time
// it is seen); advances the choices' cursors.
OutputSnapshot take_delta(OfflineRequest& request);
// Whether take_delta() would report anything new.
bool has_delta(const OfflineRequest& request);

}  // namespace lemma::python
