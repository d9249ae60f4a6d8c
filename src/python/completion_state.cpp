#include "completion_state.h"

#include <algorithm>
#include <utility>

namespace lemma::python {

CompletionState::CompletionState(const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                                 std::vector<std::string> stop, std::vector<int32_t> stop_token_ids,
                                 bool skip_special_tokens, bool want_logprobs)
    : detokenizer_(tokenizer, skip_special_tokens),
      stop_matcher_(stop),
      stops_(std::move(stop)),
      stop_token_ids_(std::move(stop_token_ids)),
      want_logprobs_(want_logprobs),
      vocab_size_(tokenizer.vocab_size()) {
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
    feed(id < vocab_size_ ? detokenizer_.push(id) : std::string());
  }
  return stop_matcher_.stopped();
}

void CompletionState::feed(const std::string& piece) {
  if (stop_matcher_.stopped()) return;
  raw_text_ += piece;
  server::StopMatcher::Result r = stop_matcher_.feed(piece);
  text_ += r.text;
  if (!r.stopped) return;
  // The match starts where the released text ends; the matcher takes the first stop listed there.
  for (const std::string& stop : stops_)
    if (!stop.empty() && raw_text_.compare(text_.size(), stop.size(), stop) == 0) {
      stop_string_ = stop;
      break;
    }
  raw_text_.clear();
}

void CompletionState::finish(RequestStatus status, std::string error) {
  if (finished()) return;
  if (!stop_matcher_.stopped()) {
    feed(detokenizer_.flush());
    text_ += stop_matcher_.flush();  // nothing when a stop string matched
  }
  status_ = stop_matcher_.stopped() ? RequestStatus::kFinishedStopped : status;
  if (status_ == RequestStatus::kFinishedStopped && !stop_string_ && !token_ids_.empty() &&
      std::find(stop_token_ids_.begin(), stop_token_ids_.end(), token_ids_.back()) != stop_token_ids_.end())
    stop_token_ = token_ids_.back();
  error_ = std::move(error);
}

std::optional<double> CompletionState::cumulative_logprob() const {
  if (!want_logprobs_) return std::nullopt;
  return cumulative_logprob_;
}

}  // namespace lemma::python
