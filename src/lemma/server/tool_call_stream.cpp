#include "lemma/server/tool_call_stream.h"

#include "lemma/base/logging.h"

namespace lemma::server {

namespace {
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
}  // namespace

std::string ToolCallStream::release_content(size_t hold) {
  // White space before a call is not content (parse_tool_calls trims it): hold it back too, so the
  // released text does not depend on how the text was cut into pieces.
  while (hold > released_ && is_space(message_[hold - 1])) --hold;
  if (hold <= released_) return {};
  std::string out = message_.substr(released_, hold - released_);
  released_ = hold;
  return out;
}

void ToolCallStream::advance(size_t index, const std::string& name, std::string_view arguments,
                             std::vector<ToolCallDelta>& out) {
  if (index >= sent_.size()) {
    sent_.resize(index + 1);
    out.push_back({index, true, name, ""});
  }
  std::string& sent = sent_[index];
  if (arguments.size() <= sent.size()) return;
  if (arguments.substr(0, sent.size()) != sent)  // cannot happen for a grammar's text: the spans only grow
    log().error("tool call {}: the streamed arguments are not a prefix of the final ones", index);
  out.push_back({index, false, "", std::string(arguments.substr(sent.size()))});
  sent = std::string(arguments);
}

ToolCallStream::Update ToolCallStream::feed(std::string_view text) {
  message_ += text;
  Update u;
  if (!incremental_) {
    u.content = release_content(tool_call_start(format_, message_));
    return u;
  }
  const ToolCallProgress progress = tool_call_progress(format_, message_);
  const size_t hold = progress.calls_begin != std::string::npos ? progress.calls_begin : tool_call_start(format_, message_);
  u.content = release_content(hold);
  for (size_t k = 0; k < progress.calls.size() && (parallel_ || k == 0); ++k) {
    const ToolCallProgress::Call& call = progress.calls[k];
    std::string_view arguments;
    if (call.args_begin != std::string::npos && !call.args_are_text) {
      const size_t end = call.args_end.value_or(message_.size());
      arguments = std::string_view(message_).substr(call.args_begin, end - call.args_begin);
    }
    advance(k, call.name, arguments, u.calls);
  }
  return u;
}

ToolCallStream::Update ToolCallStream::finish() {
  Update u;
  AssistantOutput parsed = parse_tool_calls(format_, message_);
  if (!parsed.calls.empty()) {
    if (!parallel_) parsed.calls.resize(1);
    calls_ = std::move(parsed.calls);
    calls_complete_ = true;
    if (parsed.content.size() > released_) u.content = parsed.content.substr(released_);
  } else if (!sent_.empty()) {
    // A constrained call cut short: report it as far as it was written (and streamed).
    const ToolCallProgress progress = tool_call_progress(format_, message_);
    for (size_t k = 0; k < progress.calls.size() && (parallel_ || k == 0); ++k) {
      const ToolCallProgress::Call& call = progress.calls[k];
      std::string arguments;
      if (call.args_begin != std::string::npos && !call.args_are_text)
        arguments = message_.substr(call.args_begin, call.args_end.value_or(message_.size()) - call.args_begin);
      calls_.push_back({call.name, std::move(arguments)});
    }
  } else {
    u.content = message_.substr(released_);
  }
  released_ = message_.size();
  for (size_t k = 0; k < calls_.size(); ++k) advance(k, calls_[k].name, calls_[k].arguments, u.calls);
  return u;
}

}  // namespace lemma::server
