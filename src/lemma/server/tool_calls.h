// Tool calls in a model's output text, in the format its chat template teaches it: Hermes / Qwen
// (`<tool_call>{"name": .., "arguments": ..}</tool_call>`, one block per call), Llama 3.1 / 3.2 (the
// message is `{"name": .., "parameters": ..}`, optionally after `<|python_tag|>`, calls separated by
// `;`) and Mistral (`[TOOL_CALLS]` then a JSON array of calls, or `name[CALL_ID]id[ARGS]{..}` per
// call). Text that does not parse as calls stays content: a malformed call is never half-reported.
// Pure functions over strings; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lemma::server {

enum class ToolCallFormat { kNone, kHermes, kLlama3Json, kMistral };

// The format a chat template's source teaches (kNone when it shows none of the markers above).
ToolCallFormat detect_tool_call_format(std::string_view template_source);
const char* tool_call_format_name(ToolCallFormat format);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text, as OpenAI's function.arguments
};

struct AssistantOutput {
  std::string content;           // the text before the calls (all of it when there are none)
  std::vector<ToolCall> calls;   // in output order
};

// Splits `text` (the whole generated message) into content and calls.
AssistantOutput parse_tool_calls(ToolCallFormat format, std::string_view text);

// Where the calls may begin in a message generated so far: the position of the first call marker
// (or, for Llama 3, 0 when the message starts with `{` or `<|python_tag|>`), text.size() when no
// call can have begun, or the start of a trailing partial marker (which a stream must hold back
// until the next piece says whether it is one).
size_t tool_call_start(ToolCallFormat format, std::string_view text);

// How far the calls of a message generated so far have come, for streaming them as they are
// written (tool_call_stream.h). Read the same way parse_tool_calls reads a whole message, so the
// text of a call's arguments is the same span of the message; meaningful for well-formed calls
// (a grammar's), not a validator.
struct ToolCallProgress {
  struct Call {
    std::string name;                   // complete (a call is listed once its name is)
    size_t args_begin = std::string::npos;  // where the arguments' text begins, npos while not yet
    std::optional<size_t> args_end;     // one past its end; nullopt while it is still being written
    bool args_are_text = false;         // a JSON string holding the arguments (decoded only at the end)
  };
  size_t calls_begin = std::string::npos;  // where the first call begins; npos while none has
  std::vector<Call> calls;
};
ToolCallProgress tool_call_progress(ToolCallFormat format, std::string_view text);

}  // namespace lemma::server
