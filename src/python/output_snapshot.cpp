#include "output_snapshot.h"

#include <algorithm>

namespace lemma::python {

namespace {

ChoiceSnapshot snapshot_from(const CompletionState& c, int index, size_t text_from, size_t tokens_from) {
  ChoiceSnapshot s;
  s.index = index;
  s.text = c.text().substr(std::min(text_from, c.text().size()));
  s.token_ids.assign(c.token_ids().begin() + static_cast<std::ptrdiff_t>(tokens_from), c.token_ids().end());
  if (c.cumulative_logprob()) {
    s.logprobs_requested = true;
    const size_t from = std::min(tokens_from, c.logprobs().size());
    s.logprobs.assign(c.logprobs().begin() + static_cast<std::ptrdiff_t>(from), c.logprobs().end());
    s.cumulative_logprob = c.cumulative_logprob();
  }
  if (c.finished()) {
    s.finished = c.status();
    s.error = c.error();
    s.stop_string = c.stop_string();
    s.stop_token = c.stop_token();
  }
  return s;
}

}  // namespace

OutputSnapshot full_snapshot(const OfflineRequest& request) {
  OutputSnapshot out;
  out.prompt_token_ids = request.prompt_token_ids;
  for (size_t i = 0; i < request.choices.size(); ++i)
    out.choices.push_back(snapshot_from(request.choices[i], static_cast<int>(i), 0, 0));
  out.finished = request.finished();
  return out;
}

OutputSnapshot take_delta(OfflineRequest& request) {
  OutputSnapshot out;
  out.prompt_token_ids = request.prompt_token_ids;
  for (size_t i = 0; i < request.choices.size(); ++i) {
    CompletionState& c = request.choices[i];
    CompletionState::Cursor& cursor = c.cursor();
    out.choices.push_back(snapshot_from(c, static_cast<int>(i), cursor.text, cursor.tokens));
    cursor.text = c.text().size();
    cursor.tokens = c.token_ids().size();
    cursor.finished_seen = c.finished();
  }
  out.finished = request.finished();
  return out;
}

bool has_delta(const OfflineRequest& request) {
  return std::any_of(request.choices.begin(), request.choices.end(), [](const CompletionState& c) {
    const CompletionState::Cursor& cursor = c.cursor();
    return c.token_ids().size() > cursor.tokens || c.text().size() > cursor.text ||
           (c.finished() && !cursor.finished_seen);
  });
}

}  // namespace lemma::python
