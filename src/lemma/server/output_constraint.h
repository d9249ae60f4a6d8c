// Structured output requests: OpenAI's `response_format` (json_object, json_schema), vLLM's
// `guided_json` / `guided_regex` / `guided_choice` / `guided_grammar` (also inside `structured_outputs`
// as json / regex / choice / grammar) and llama-server's `json_schema` and `grammar` (GBNF), on chat
// and completions. At most one per request. The
// grammar is compiled before the request reaches the engine: a schema or pattern that cannot be
// honoured exactly is a 400 naming the field and the keyword, never unconstrained output.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemma/grammar/token_constraint.h"
#include "lemma/server/tool_calls.h"

namespace lemma::server {

struct OutputConstraintSpec {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kRegex, kChoice, kGbnf };
  Kind kind = Kind::kNone;
  nlohmann::ordered_json schema;  // kJsonSchema
  std::string regex;              // kRegex
  std::vector<std::string> choices;  // kChoice
  std::string gbnf;               // kGbnf: llama.cpp's grammar notation
  std::string field;              // where it came from, for errors ("response_format.json_schema.schema")
};

// The request fields that ask for structured output (one of them at most).
inline constexpr std::array<const char*, 8> kOutputConstraintFields = {
    "response_format", "guided_json", "json_schema", "guided_regex", "guided_choice", "guided_grammar", "grammar",
    "structured_outputs"};

// The spec of `body` (ordered: a schema's properties keep the order the client wrote them in);
// throws ApiError(400) for malformed or conflicting fields.
OutputConstraintSpec parse_output_constraint(const nlohmann::ordered_json& body);

// The compiled constraint over `vocabulary`; throws ApiError(400) naming spec.field and what in it
// cannot be honoured.
std::shared_ptr<const grammar::TokenConstraint> compile_output_constraint(
    const OutputConstraintSpec& spec, std::shared_ptr<const grammar::VocabularyIndex> vocabulary);

// tool_choice "required" (`forced_tool` empty: any of `tools`) or a named function: the grammar of
// one call in the template's format (Hermes `<tool_call>{..}</tool_call>`, Llama 3 `{"name", "parameters"}`,
// Mistral `[TOOL_CALLS][{"name", "arguments"}]` with the marker as a token reference to the special
// token), its arguments constrained by the function's parameter schema. Throws ApiError(400) on
// `tool_choice` for a format that cannot be forced (or a Mistral vocabulary without the marker) or
// parameters that cannot be honoured.
std::shared_ptr<const grammar::TokenConstraint> compile_forced_tool_call(
    const nlohmann::ordered_json& tools, const std::string& forced_tool, ToolCallFormat format,
    std::shared_ptr<const grammar::VocabularyIndex> vocabulary);

}  // namespace lemma::server
