// CompletionCall: the server side of one generation request's lifecycle, free of any socket
// code. It turns the engine's token deltas (read from its OutputBuffer) into text (streaming
// detokeniser + stop strings per choice), SSE frames or one final body, and decides the single
// terminal state: finished (stop/length), cancelled, timed out, failed, or overflowed.
// Not thread-safe: used from one connection's strand (the OutputBuffer is the thread boundary).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemma/server/call_encoder.h"
#include "lemma/server/engine_client.h"
#include "lemma/server/http_types.h"
#include "lemma/server/metrics.h"
#include "lemma/server/openai_request.h"
#include "lemma/server/output_buffer.h"
#include "lemma/server/response_format.h"
#include "lemma/server/stop_matcher.h"
#include "lemma/server/tool_call_stream.h"
#include "lemma/tokenizer/streaming.h"

namespace lemma::server {

using Clock = std::chrono::steady_clock;

enum class Terminal { kNone, kFinished, kCancelled, kTimedOut, kFailed, kOverflow };
const char* terminal_name(Terminal t);

class CompletionCall {
 public:
  CompletionCall(ParsedCompletion request, const Tokenizer& tokenizer, ResponseIds ids, const ServerConfig& config,
                 Metrics& metrics, Clock::time_point arrival);

  const std::shared_ptr<OutputBuffer>& buffer() const { return buffer_; }
  CompletionRequest engine_request() const;
  // The LoRA adapter the request's `model` named (G29); the engine request carries it.
  void set_lora(std::shared_ptr<const LoraAdapter> lora) { lora_ = std::move(lora); }
  bool streaming() const { return request_.stream; }
  // Writes the output in another API's shapes (call_encoder.h) instead of OpenAI chat/completions';
  // only for one choice without tool calls.
  void set_encoder(std::unique_ptr<CallEncoder> encoder) { encoder_ = std::move(encoder); }

  // Consumes what the engine delivered. Streaming: returns the SSE bytes to write next (may be
  // empty; ends with the usage chunk and "data: [DONE]" once the call is terminal).
  std::string poll();
  // Ends the call from outside (client gone, deadline, shutdown); returns the final SSE frames
  // (an error event and [DONE]) when streaming. No effect once terminal.
  std::string abort(Terminal why, const std::string& message);
  Terminal terminal() const { return terminal_; }
  // True exactly once, when the call ended before the engine finished every choice.
  bool take_engine_cancel();
  // Non-streaming result once terminal (200 with the body, or an error object).
  HttpResponse response() const;
  // For access logs.
  const std::string& finish_label() const { return finish_label_; }
  Usage usage() const;
  const std::string& id() const { return ids_.id; }
  // Phase timings for the access log; negative when unknown.
  double ttft_seconds() const;
  double queue_seconds() const { return queue_seconds_; }

 private:
  std::shared_ptr<const LoraAdapter> lora_;
  std::unique_ptr<CallEncoder> encoder_;
  struct PendingLogprob {
    int32_t id;
    SampleResult logprob;
    size_t raw_start;  // where the token's text begins in the choice's text before stop strings
  };
  struct Choice {
    Choice(const Tokenizer& tok, bool skip_special) : detok(tok, skip_special) {}
    StreamingDetokenizer detok;
    std::optional<StopMatcher> stop;
    std::string text;                       // all emitted text (non-streaming body)
    ojson logprobs;                         // accumulated (non-streaming)
    std::optional<std::string> finish;      // OpenAI finish_reason once the client-side choice ended
    std::vector<PendingLogprob> pending_logprobs;  // entries whose text is not released yet
    size_t raw_bytes = 0;                          // detokenised bytes so far
    size_t released_bytes = 0;                     // of those, emitted past the stop matcher
    size_t text_base = 0;                          // the echoed prompt's length
    int64_t tokens = 0;
    bool engine_done = false;
    bool role_sent = false;
    // With tool calls on (ParsedCompletion::tool_format): the message's content and calls.
    std::optional<ToolCallStream> tools;
  };
  // The content of `text` (this delta's text past the stop matcher) to release now, adding the
  // tool-call deltas to `calls` (tool_call_stream.h); the identity when tool calls are off.
  std::string route_tool_calls(Choice& c, std::string text, std::vector<ToolCallDelta>& calls);
  void consume(CompletionDelta& d, std::string& frames);
  ojson take_logprobs(Choice& c);
  void end(Terminal why, const std::string& message, std::string* frames);
  void record_metrics();
  CallEnding ending() const;

  ParsedCompletion request_;
  Tokenizer tokenizer_;
  ResponseIds ids_;
  Metrics& metrics_;
  Clock::time_point arrival_;
  std::chrono::milliseconds timeout_;
  std::optional<Clock::time_point> first_token_, last_token_;
  std::shared_ptr<OutputBuffer> buffer_;
  std::vector<Choice> choices_;
  Terminal terminal_ = Terminal::kNone;
  std::string error_message_;
  std::string finish_label_;
  int64_t cached_tokens_ = 0;
  double queue_seconds_ = -1.0;
  bool cancel_taken_ = false;
  bool started_ = false;
};

}  // namespace lemma::server
