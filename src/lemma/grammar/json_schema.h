// JSON Schema -> grammar of the JSON texts the schema accepts. Object properties come in the
// schema's order (required ones must appear; extra keys, where allowed, after them) or, as an
// option, in any order. A keyword lemma cannot honour exactly throws Unsupported naming it: never
// unconstrained output.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lemma/grammar/grammar.h"

namespace lemma::grammar {

enum class PropertyOrder {
  // The schema's order (extra keys after the defined ones): the serving default. Models trained on
  // schema-ordered JSON follow it anyway, and a fixed order makes required keys forced bytes
  // (ConstraintState::forced_bytes) that jump-forward decoding can skip.
  kDefinition,
  // Any order, each defined property at most once, every required one present, extra keys (where
  // allowed) anywhere: exactly what a validator accepts (JSON Schema fixes no order). Objects with
  // more than kMaxSlots defined properties keep the schema's order.
  kAny,
};

struct JsonSchemaOptions {
  // No whitespace between tokens (otherwise JSON's free whitespace); the separators are then exactly
  // item_separator and key_separator (e.g. ", " and ": " as Python's json.dumps writes).
  bool compact = false;
  // kUnbounded: JSON's free whitespace. Otherwise, as llama.cpp's JSON grammars: in one place at most
  // a single space, or a newline and up to this many spaces or tabs of indentation. Serving bounds
  // it: a model may otherwise prefer white space forever, and a grammar that allows it cannot stop it.
  int max_whitespace = kUnbounded;
  // Literal text before and after the JSON value (e.g. a tool-call tag around a call's object).
  std::string prefix = {}, suffix = {};
  // A token before `prefix`, named by its text (e.g. Mistral's special "[TOOL_CALLS]"): a token
  // reference that resolve_tokens (token_constraint.h) binds to a vocabulary.
  std::string prefix_token = {};
  PropertyOrder property_order = PropertyOrder::kDefinition;
  std::string item_separator = ",", key_separator = ":";  // with compact only
};

Grammar json_schema_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});

}  // namespace lemma::grammar
