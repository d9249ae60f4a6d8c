// CompletionState: one choice of one offline request as it grows — its token ids, its text (streamed
// detokenisation with stop strings held back and cut), its per-token logprobs and finish status;
// and how much of it a streaming reader has already taken. Not thread-safe (the OfflineEngine
// owning it serialises access).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lemma/sampling/sampler.h"
#include "lemma/sched/request_status.h"
#include "lemma/server/stop_matcher.h"
#include "lemma/tokenizer/streaming.h"

namespace lemma::python {

class CompletionState {
 public:
  // `prompt` primes the detokeniser; `stop` are the request's stop strings and `stop_token_ids`
  // the ids it asked to stop at (to name the one that ended it, not to detect it: the engine does).
  CompletionState(const Tokenizer& tokenizer, std::span<const int32_t> prompt, std::vector<std::string> stop,
                  std::vector<int32_t> stop_token_ids, bool skip_special_tokens, bool want_logprobs);

  // Appends sampled tokens (logprobs parallel to them when asked for). Returns true when a stop
  // string completed: the text ends before it and the caller should end the request as stopped.
  bool append(std::span<const int32_t> token_ids, std::span<const SampleResult> logprobs);
  // Marks the choice finished; releases the text held back for stop strings unless one matched.
  void finish(RequestStatus status, std::string error = {});

  bool finished() const { return is_finished(status_); }
  RequestStatus status() const { return status_; }
  const std::string& error() const { return error_; }
  // What ended a stopped choice (vLLM's stop_reason): the stop string, or one of the request's
  // stop_token_ids; neither for EOS or end-of-turn tokens.
  const std::optional<std::string>& stop_string() const { return stop_string_; }
  const std::optional<int32_t>& stop_token() const { return stop_token_; }
  const std::string& text() const { return text_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  const std::vector<SampleResult>& logprobs() const { return logprobs_; }  // empty unless asked for
  // Sum of the sampled tokens' logprobs; nullopt unless logprobs were asked for.
  std::optional<double> cumulative_logprob() const;

  // Streaming: the text / token / logprob positions a reader has taken so far.
  struct Cursor {
    size_t text = 0, tokens = 0;
    bool finished_seen = false;
  };
  Cursor& cursor() { return cursor_; }
  const Cursor& cursor() const { return cursor_; }

 private:
  // Feeds detokenised text to the stop matcher; records the stop string when one completes.
  void feed(const std::string& piece);

  StreamingDetokenizer detokenizer_;
  server::StopMatcher stop_matcher_;
  std::vector<std::string> stops_;
  std::vector<int32_t> stop_token_ids_;
  std::string raw_text_ = {};  // every piece fed, stop strings included (until one matches)
  std::optional<std::string> stop_string_ = {};
  std::optional<int32_t> stop_token_ = {};
  bool want_logprobs_ = false;
  int32_t vocab_size_ = 0;
  std::string text_ = {};
  std::vector<int32_t> token_ids_ = {};
  std::vector<SampleResult> logprobs_ = {};
  double cumulative_logprob_ = 0.0;
  RequestStatus status_ = RequestStatus::kRunning;
  std::string error_ = {};
  Cursor cursor_ = {};
};

}  // namespace lemma::python
