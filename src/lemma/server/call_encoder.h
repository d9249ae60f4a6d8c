// CallEncoder: how one generation call's output is written for an API whose shapes are not OpenAI
// chat/completions' (the Responses API, Anthropic's Messages API). CompletionCall keeps the whole
// lifecycle (detokenising, stop strings, terminal state, metrics) and hands the encoder only the
// released text and the ending; the encoder returns SSE frames or the whole body. Calls with an
// encoder have one choice and no tool calls. One per call, used from the call's strand only.
#pragma once

#include <optional>
#include <string>

#include "lemma/server/http_types.h"
#include "lemma/server/response_format.h"

namespace lemma::server {

// How a finished call ended.
struct CallEnding {
  std::string finish_reason = {};                // OpenAI's: "stop" (EOS or a stop string) or "length"
  std::optional<std::string> stop_sequence = {};  // the stop string that ended it, if one did
  Usage usage = {};
};

class CallEncoder {
 public:
  virtual ~CallEncoder() = default;
  // Streaming: the frames before any text (`usage` has the prompt tokens only).
  virtual std::string stream_start(const Usage& usage) = 0;
  // Streaming: frames for released text (never empty).
  virtual std::string stream_text(const std::string& text) = 0;
  // Streaming: the closing frames of a finished call; `text` is everything released.
  virtual std::string stream_finish(const std::string& text, const CallEnding& ending) = 0;
  // Streaming: the closing frames of a call that failed, timed out or was cancelled.
  virtual std::string stream_error(int status, const std::string& message, const std::string& code) = 0;
  // Non-streaming: the 200 body of a finished call.
  virtual std::string body(const std::string& text, const CallEnding& ending) = 0;
};

// `event: <name>\ndata: <json>\n\n`: the named SSE events both APIs use.
std::string sse_named_event(const std::string& name, const ojson& payload);

}  // namespace lemma::server
