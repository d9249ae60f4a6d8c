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

#include "lemma/grammar/json_schema.h"
#include "lemma/grammar/token_constraint.h"

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

// JSON's white space as the server allows it in structured output and tool calls (bounded).
const grammar::JsonSchemaOptions& serving_json_options();

}  // namespace lemma::server
