// Grammars of tool calls in a chat template's format, with each call's arguments constrained by
// its function's parameter schema. tool_choice "required" or a named function: the message is the
// calls. tool_choice "auto": a lazy grammar (as llama.cpp's grammar triggers): free text that never
// contains the format's call marker, then, once the model writes the marker (`<tool_call>` for
// Hermes/Qwen, `[TOOL_CALLS]` for Mistral, `{"name"` or `<|python_tag|>` opening a Llama 3 message),
// only well-formed calls. So a call that has begun always completes (or is cut by max_tokens), and
// its raw text can be streamed as it is written (tool_call_stream.h). Pure functions; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemma/grammar/token_constraint.h"
#include "lemma/server/tool_calls.h"

namespace lemma::server {

// How a Mistral template writes a call after `[TOOL_CALLS]`: a JSON array of {"name", "arguments"}
// (v3), `name[ARGS]{..}` (v11+: Devstral, Ministral 3) or `name[CALL_ID]id[ARGS]{..}` (Mistral
// Small 3.2), each call after its own `[TOOL_CALLS]`.
enum class MistralCallForm { kJsonArray, kNameArgs, kNameCallIdArgs };
MistralCallForm detect_mistral_call_form(std::string_view template_source);

struct ToolCallSyntax {
  ToolCallFormat format = ToolCallFormat::kNone;
  MistralCallForm mistral_form = MistralCallForm::kJsonArray;
};

// tool_choice "required" (`forced_tool` empty: any of `tools`) or a named function: exactly one call
// (a weak model forced into calls could otherwise repeat them until max_tokens). Special markers (`[TOOL_CALLS]`, and `[ARGS]` /
// `[CALL_ID]` where the vocabulary has them as special tokens) are token references. Throws
// ApiError(400) on `tool_choice` for a format that cannot be forced (or a Mistral vocabulary
// without the marker) or parameters that cannot be honoured.
std::shared_ptr<const grammar::TokenConstraint> compile_forced_tool_call(
    const nlohmann::ordered_json& tools, const std::string& forced_tool, const ToolCallSyntax& syntax,
    std::shared_ptr<const grammar::VocabularyIndex> vocabulary);

// tool_choice "auto": the lazy grammar above; nullptr when the format has none or the tools'
// schemas cannot be honoured exactly (the caller then parses unconstrained text, whole calls only).
std::shared_ptr<const grammar::TokenConstraint> compile_lazy_tool_calls(
    const nlohmann::ordered_json& tools, const ToolCallSyntax& syntax, bool parallel,
    std::shared_ptr<const grammar::VocabularyIndex> vocabulary);

}  // namespace lemma::server
