// JSON Schema -> grammar of the JSON texts the schema accepts. Object properties come in the
// schema's order (required ones must appear; extra keys, where allowed, after them). A keyword
// lemma cannot honour exactly throws Unsupported naming it: never unconstrained output.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lemma/grammar/grammar.h"

namespace lemma::grammar {

struct JsonSchemaOptions {
  bool compact = false;  // no whitespace between tokens (otherwise JSON's free whitespace)
  // kUnbounded: JSON's free whitespace. Otherwise, as llama.cpp's JSON grammars: in one place at most
  // a single space, or a newline and up to this many spaces or tabs of indentation. Serving bounds
  // it: a model may otherwise prefer white space forever, and a grammar that allows it cannot stop it.
  int max_whitespace = kUnbounded;
  // Literal text before and after the JSON value (e.g. a tool-call tag around a call's object).
  std::string prefix, suffix;
};

Grammar json_schema_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});

}  // namespace lemma::grammar
