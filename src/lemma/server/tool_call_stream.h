// One chat choice's message turned into content and tool-call deltas as it is generated, the way
// OpenAI streams them: content up to where a call begins; then per call a first delta with its
// index and name (`arguments: ""`; the response layer adds id and type), then the arguments' text
// piece by piece as the model writes it; at the end the message's calls.
// Incremental only where a grammar guarantees that a begun call is well-formed (tool_call_grammar.h):
// then the fragments are raw spans of the message, and they add up, byte for byte, to the
// `arguments` the whole message parses into. Unconstrained text may hold a malformed call, which
// must never be half-reported: then each call goes out whole once the message has ended.
// A constrained message cut in a call (max_tokens, a stop string) reports the call as far as it got,
// streamed or not, with the engine's finish reason (as OpenAI does). Not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lemma/server/tool_calls.h"

namespace lemma::server {

struct ToolCallDelta {
  size_t index = 0;         // the call's position in the message
  bool opens = false;       // the call's first delta: carries `name` (and `arguments` "")
  std::string name = {};
  std::string arguments = {};  // the next piece of the arguments' text
};

class ToolCallStream {
 public:
  // `incremental`: the message is generated under a tool-call grammar. `parallel` false: only the
  // first call is reported.
  ToolCallStream(ToolCallFormat format, bool incremental, bool parallel)
      : format_(format), incremental_(incremental), parallel_(parallel) {}

  struct Update {
    std::string content;               // content to release now
    std::vector<ToolCallDelta> calls;  // in order
  };
  // The next piece of the message's text.
  Update feed(std::string_view text);
  // The message has ended: the rest of its content, and the calls' remaining deltas.
  Update finish();
  // After finish(): the message's calls (those reported), and whether they parsed whole (the choice
  // then finishes with "tool_calls").
  const std::vector<ToolCall>& calls() const { return calls_; }
  bool calls_complete() const { return calls_complete_; }

 private:
  // Content released up to `hold` (less the white space before it).
  std::string release_content(size_t hold);
  // Deltas that bring call `index` (announced or not) up to `name` and `arguments` so far.
  void advance(size_t index, const std::string& name, std::string_view arguments, std::vector<ToolCallDelta>& out);

  ToolCallFormat format_;
  bool incremental_;
  bool parallel_;
  std::string message_;
  size_t released_ = 0;             // bytes of message_ released as content (or dropped as markup)
  std::vector<std::string> sent_;   // per announced call: the arguments' text sent so far
  std::vector<ToolCall> calls_;
  bool calls_complete_ = false;
};

}  // namespace lemma::server
