#include "completion_state.h"

#include <utility>

namespace lemma::python {

CompletionState::CompletionState(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                 std::vector<std::string> stop, bool skip_special_tokens, bool want_logprobs)
    : detokenizer_(tokenizer, skip_special_tokens), stop_matcher_(std::move(stop)), want_logprobs_(want_logprobs), vocab_size_(tokenizer.vocab_size()) {
  detokenizer_.prime(prompt);
}

bool CompletionState::append(std::span<const int32_t> token_ids, std::span<const SampleResult> logprobs) {
  for (size_t i = 0; i < token_ids.size(); ++i) {
    token_ids_.push_back(token_ids[i]);
    if (want_logprobs_ && i < logprobs.size()) {
      logprobs_.push_back(logprobs[i]);
      cumulative_logprob_ += logprobs[i].logprob;
    }
    if (stop_matcher_.stopped()) continue;  // tokens of the same step after a stop string: no text
    // Ids past the tokenizer's vocabulary (a padded LM head) have no text.
    const int32_t id = token_ids[i];
    server::StopMatcher::Result r = stop_matcher_.feed(id < vocab_size_ ? detokenizer_.push(id) : std::string());
    text_ += r.text;
  }
  return stop_matcher_.stopped();
}

void CompletionState::finish(RequestStatus status, std::string error) {
  if (finished()) return;
  if (!stop_matcher_.stopped()) {
    server::StopMatcher::Result r = stop_matcher_.feed(detokenizer_.flush());
    text_ += r.text;
    if (!r.stopped) text_ += stop_matcher_.flush();
  }
  status_ = stop_matcher_.stopped() ? RequestStatus::kFinishedStopped : status;
  error_ = std::move(error);
}

std::optional<double> CompletionState::cumulative_logprob() const {
  if (!want_logprobs_) return std::nullopt;
  return cumulative_logprob_;
}

}  // namespace lemma::python
