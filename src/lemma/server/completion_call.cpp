#include "lemma/server/completion_call.h"

#include <algorithm>

#include "lemma/server/api_error.h"

namespace lemma::server {

const char* terminal_name(Terminal t) {
  switch (t) {
    case Terminal::kNone: return "none";
    case Terminal::kFinished: return "finished";
    case Terminal::kCancelled: return "cancelled";
    case Terminal::kTimedOut: return "timeout";
    case Terminal::kFailed: return "error";
    case Terminal::kOverflow: return "overflow";
  }
  return "none";
}

CompletionCall::CompletionCall(ParsedCompletion request, const Tokenizer& tokenizer, ResponseIds ids,
                               const ServerConfig& config, Metrics& metrics, Clock::time_point arrival)
    : request_(std::move(request)), tokenizer_(tokenizer), ids_(std::move(ids)), metrics_(metrics), arrival_(arrival),
      timeout_(config.request_timeout),
      buffer_(std::make_shared<OutputBuffer>(config.stream_buffer_tokens)) {
  choices_.reserve(size_t(request_.n));
  for (int i = 0; i < request_.n; ++i) {
    // Tool-call markers may be special tokens (Mistral's [TOOL_CALLS], Llama's <|python_tag|>).
    Choice& c = choices_.emplace_back(tokenizer_, request_.tool_format == ToolCallFormat::kNone);
    c.detok.prime(request_.prompt_ids);
    if (request_.tool_format != ToolCallFormat::kNone)
      c.tools.emplace(request_.tool_format, request_.tool_calls_constrained, request_.parallel_tool_calls);
    if (!request_.stop.empty()) c.stop.emplace(request_.stop);
    if (request_.echo && request_.kind == ApiKind::kCompletions) {
      c.text = request_.prompt_text ? *request_.prompt_text : tokenizer_.decode(request_.prompt_ids);
      c.text_base = c.text.size();
    }
  }
}

CompletionRequest CompletionCall::engine_request() const {
  CompletionRequest r;
  r.request_id = ids_.id;
  r.prompt_ids = request_.prompt_ids;
  r.sampling = request_.sampling;
  r.max_tokens = request_.max_tokens.value_or(16);
  r.n = request_.n;
  r.stop_token_ids = request_.stop_token_ids;
  r.ignore_eos = request_.ignore_eos;
  r.timeout = timeout_;
  r.streaming = request_.streaming;
  r.lora = lora_;
  return r;
}

void CompletionCall::consume(CompletionDelta& d, std::string& frames) {
  if (d.index < 0 || d.index >= int(choices_.size())) return;  // engine bug: ignore
  Choice& c = choices_[size_t(d.index)];
  if (d.finish_reason) {
    c.engine_done = true;
    cached_tokens_ = std::max(cached_tokens_, d.cached_prompt_tokens);
    if (queue_seconds_ < 0) {
      queue_seconds_ = d.queue_seconds;
      metrics_.observe_queue_time(d.queue_seconds);
    }
  }
  if (c.finish) return;  // the client-side choice already ended (stop string): discard
  std::string text;
  const bool want_logprobs = request_.sampling.logprobs;
  for (size_t k = 0; k < d.token_ids.size(); ++k) {
    const int32_t id = d.token_ids[k];
    ++c.tokens;
    if (want_logprobs && k < d.logprobs.size()) c.pending_logprobs.push_back({id, std::move(d.logprobs[k]), c.raw_bytes});
    bool is_stop_token = std::find(request_.stop_token_ids.begin(), request_.stop_token_ids.end(), id) !=
                             request_.stop_token_ids.end() ||
                         (!request_.ignore_eos && tokenizer_.is_end_of_generation(id));
    if (is_stop_token) continue;
    std::string piece = id < tokenizer_.vocab_size() ? c.detok.push(id) : std::string();
    c.raw_bytes += piece.size();
    if (c.stop) {
      auto r = c.stop->feed(piece);
      text += r.text;
      c.released_bytes += r.text.size();
      if (r.stopped) {
        c.finish = std::string(finish_reason(RequestStatus::kFinishedStopped));
        break;
      }
    } else {
      text += piece;
      c.released_bytes = c.raw_bytes;
    }
  }
  if (!d.token_ids.empty()) {
    auto now = Clock::now();
    if (!first_token_) {
      first_token_ = now;
      metrics_.observe_ttft(std::chrono::duration<double>(now - arrival_).count());
    } else if (last_token_) {
      metrics_.observe_itl(std::chrono::duration<double>(now - *last_token_).count());
    }
    last_token_ = now;
  }
  if (d.finish_reason && !c.finish) {
    switch (*d.finish_reason) {
      case RequestStatus::kFinishedStopped:
      case RequestStatus::kFinishedLength: c.finish = std::string(finish_reason(*d.finish_reason)); break;
      case RequestStatus::kFinishedCancelled:
        end(Terminal::kCancelled, "the request was cancelled by the engine", &frames);
        return;
      default:  // timed out or failed (a live state here would be an engine bug: fail it too)
        end(Terminal::kFailed, d.error.empty() ? "engine error" : d.error, &frames);
        return;
    }
    std::string rest = c.detok.flush();
    if (c.stop) {
      auto r = c.stop->feed(rest);
      text += r.text;
      c.released_bytes += r.text.size();
      if (!r.stopped) text += c.stop->flush();
    } else {
      text += rest;
    }
  }
  std::vector<ToolCallDelta> calls;
  text = route_tool_calls(c, std::move(text), calls);
  ojson lp = take_logprobs(c);
  c.text += text;
  if (encoder_) {
    if (request_.stream && !text.empty()) frames += encoder_->stream_text(text);
  } else if (request_.stream) {
    if (!calls.empty()) {  // content, then the calls' deltas, then the end
      if (!text.empty() || !lp.is_null()) frames += sse_event(chunk_json(request_.kind, ids_, d.index, text, lp, std::nullopt, false));
      for (const ToolCallDelta& call : calls) frames += sse_event(tool_call_chunk_json(ids_, d.index, call, request_.tool_format));
      if (c.finish) frames += sse_event(chunk_json(request_.kind, ids_, d.index, "", nullptr, c.finish, false));
    } else if (!text.empty() || c.finish || !lp.is_null()) {
      frames += sse_event(chunk_json(request_.kind, ids_, d.index, text, lp, c.finish, false));
    }
  } else if (!lp.is_null()) {
    append_logprobs(request_.kind, c.logprobs, lp);
  }
}

std::string CompletionCall::route_tool_calls(Choice& c, std::string text, std::vector<ToolCallDelta>& calls) {
  if (!c.tools) return text;
  ToolCallStream::Update u = c.finish ? [&] {
    ToolCallStream::Update fed = c.tools->feed(text);
    ToolCallStream::Update rest = c.tools->finish();
    fed.content += rest.content;
    for (ToolCallDelta& d : rest.calls) fed.calls.push_back(std::move(d));
    return fed;
  }() : c.tools->feed(text);
  calls = std::move(u.calls);
  // A message cut by max_tokens mid-call never parses whole, so whole calls mean a natural stop.
  if (c.finish && c.tools->calls_complete()) c.finish = "tool_calls";
  return std::move(u.content);
}

// The logprobs of the tokens whose text has been released. Tokens after a stop string's cut never
// get one: while a stop string may still begin, a token's entry waits with its text.
ojson CompletionCall::take_logprobs(Choice& c) {
  if (c.pending_logprobs.empty()) return nullptr;
  const bool ended = c.finish.has_value();
  const bool cut = ended && c.stop && c.stop->stopped();
  size_t n = 0;
  while (n < c.pending_logprobs.size()) {
    const PendingLogprob& p = c.pending_logprobs[n];
    const bool released = !c.stop ? true : cut ? p.raw_start < c.released_bytes
                                             : ended || p.raw_start < c.released_bytes;
    if (!released) break;
    ++n;
  }
  ojson lp;
  if (n > 0) {
    std::vector<int32_t> ids;
    std::vector<SampleResult> entries;
    for (size_t i = 0; i < n; ++i) {
      ids.push_back(c.pending_logprobs[i].id);
      entries.push_back(std::move(c.pending_logprobs[i].logprob));
    }
    lp = logprobs_json(request_.kind, tokenizer_, ids, entries,
                       int64_t(c.text_base + c.pending_logprobs.front().raw_start));
  }
  c.pending_logprobs.erase(c.pending_logprobs.begin(), c.pending_logprobs.begin() + std::ptrdiff_t(n));
  if (cut) c.pending_logprobs.clear();
  return lp;
}

std::string CompletionCall::poll() {
  std::string frames;
  if (terminal_ != Terminal::kNone) return frames;
  if (request_.stream && !started_ && encoder_) {
    frames += encoder_->stream_start(usage());
  } else if (request_.stream && !started_) {
    for (size_t i = 0; i < choices_.size(); ++i) {
      if (request_.kind == ApiKind::kChat) {
        frames += sse_event(chunk_json(request_.kind, ids_, int(i), "", nullptr, std::nullopt, true));
      } else if (!choices_[i].text.empty()) {  // echo
        frames += sse_event(chunk_json(request_.kind, ids_, int(i), choices_[i].text, nullptr, std::nullopt, false));
      }
    }
  }
  started_ = true;
  for (CompletionDelta& d : buffer_->take()) {
    consume(d, frames);
    if (terminal_ != Terminal::kNone) return frames;
  }
  if (buffer_->overflowed()) {
    end(Terminal::kOverflow, "the client read the stream too slowly; its output buffer overflowed", &frames);
  } else if (std::all_of(choices_.begin(), choices_.end(), [](const Choice& c) { return c.finish.has_value(); })) {
    end(Terminal::kFinished, "", &frames);
  }
  return frames;
}

std::string CompletionCall::abort(Terminal why, const std::string& message) {
  std::string frames;
  if (terminal_ == Terminal::kNone) end(why, message, &frames);
  return frames;
}

void CompletionCall::end(Terminal why, const std::string& message, std::string* frames) {
  terminal_ = why;
  error_message_ = message;
  finish_label_ = why == Terminal::kFinished ? choices_.front().finish.value_or("stop") : terminal_name(why);
  if (frames && request_.stream && encoder_) {
    if (why == Terminal::kFinished) {
      *frames += encoder_->stream_finish(choices_.front().text, ending());
    } else {
      const int status = why == Terminal::kTimedOut ? 504 : why == Terminal::kCancelled ? 503 : 500;
      *frames += encoder_->stream_error(status, message, terminal_name(why));
    }
  } else if (frames && request_.stream) {
    if (why != Terminal::kFinished) {
      int status = why == Terminal::kTimedOut ? 504 : why == Terminal::kCancelled ? 503 : 500;
      *frames += sse_event_raw(error_body(status, message, "", std::string(terminal_name(why))));
    } else if (request_.include_usage) {
      *frames += sse_event(usage_chunk_json(request_.kind, ids_, usage()));
    }
    *frames += kSseDone;
  }
  record_metrics();
}

void CompletionCall::record_metrics() {
  auto now = Clock::now();
  Usage u = usage();
  metrics_.record_finished(finish_label_, u.prompt_tokens, u.completion_tokens);
  metrics_.observe_e2e(std::chrono::duration<double>(now - arrival_).count());
  if (first_token_ && last_token_ && u.completion_tokens > 1) {
    metrics_.observe_tpot(std::chrono::duration<double>(*last_token_ - *first_token_).count() /
                          double(u.completion_tokens - 1));
  }
}

CallEnding CompletionCall::ending() const {
  CallEnding e;
  const Choice& c = choices_.front();
  e.finish_reason = c.finish.value_or("stop");
  if (c.stop && c.stop->stopped()) e.stop_sequence = c.stop->matched();
  e.usage = usage();
  return e;
}

bool CompletionCall::take_engine_cancel() {
  if (terminal_ == Terminal::kNone || cancel_taken_) return false;
  if (std::all_of(choices_.begin(), choices_.end(), [](const Choice& c) { return c.engine_done; })) return false;
  cancel_taken_ = true;
  return true;
}

double CompletionCall::ttft_seconds() const {
  return first_token_ ? std::chrono::duration<double>(*first_token_ - arrival_).count() : -1.0;
}

Usage CompletionCall::usage() const {
  Usage u;
  u.prompt_tokens = int64_t(request_.prompt_ids.size());
  for (const Choice& c : choices_) u.completion_tokens += c.tokens;
  u.cached_tokens = cached_tokens_;
  return u;
}

HttpResponse CompletionCall::response() const {
  HttpResponse r;
  switch (terminal_) {
    case Terminal::kFinished: {
      if (encoder_) {
        r.body = encoder_->body(choices_.front().text, ending());
        return r;
      }
      ojson choices = ojson::array();
      for (size_t i = 0; i < choices_.size(); ++i) {
        ojson choice = choice_json(request_.kind, int(i), choices_[i].text, choices_[i].logprobs, choices_[i].finish);
        if (choices_[i].tools && !choices_[i].tools->calls().empty()) add_tool_calls(choice, ids_, choices_[i].tools->calls(), request_.tool_format);
        choices.push_back(std::move(choice));
      }
      r.body = dump_json(response_json(request_.kind, ids_, std::move(choices), usage()));
      return r;
    }
    case Terminal::kTimedOut: r.status = 504; break;
    case Terminal::kCancelled: r.status = 503; break;
    default: r.status = 500; break;
  }
  r.body = error_body(r.status, error_message_, "", std::string(terminal_name(terminal_)));
  return r;
}

}  // namespace lemma::server
