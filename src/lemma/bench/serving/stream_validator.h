// Checks one streamed OpenAI completion (the SSE `data:` payloads in order, with the time each
// arrived) and turns it into a RequestOutcome. A response counts only when it is well-formed: every
// payload is a JSON object with `choices` (or the final `[DONE]`), no `error` object, a
// finish_reason, at least one content chunk, `[DONE]` last, and usage when it was asked for.
// Not thread-safe: one per request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lemma/bench/serving/request_outcome.h"

namespace lemma::bench::serving {

enum class Endpoint { kCompletions, kChat };

class StreamValidator {
 public:
  StreamValidator(Endpoint endpoint, bool expect_usage) : endpoint_(endpoint), expect_usage_(expect_usage) {}
  // `at_s`: seconds since the request was sent.
  void on_payload(const std::string& payload, double at_s);
  // Fills timings, counts and ok/error of `out` (start_s and the prompt estimate are kept).
  // `transport_error`: a connection or framing problem seen by the caller, or empty.
  void finish(double end_s, const std::string& transport_error, RequestOutcome& out) const;

 private:
  void fail(std::string why);
  Endpoint endpoint_;
  bool expect_usage_;
  std::optional<std::string> error_;  // the first problem found
  int64_t chunks_ = 0;
  int64_t content_chunks_ = 0;
  double first_content_s_ = 0.0, last_content_s_ = 0.0;
  std::vector<double> itl_s_;
  bool done_ = false;
  bool finished_ = false;  // a finish_reason arrived
  std::optional<int64_t> usage_prompt_, usage_completion_;
};

}  // namespace lemma::bench::serving
