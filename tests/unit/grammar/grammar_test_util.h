// Helpers: compile a schema or regex and ask whether a whole text is accepted.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "lemma/grammar/json_schema.h"
#include "lemma/grammar/recognizer.h"
#include "lemma/grammar/regex.h"

namespace lemma::grammar::testing {

inline bool grammar_accepts(Grammar g, const std::string& text) {
  ParserStates states(std::make_shared<const Grammar>(std::move(g)));
  Recognizer r(states);
  return r.feed(text) && r.accepting();
}

inline bool schema_accepts(const std::string& schema, const std::string& text, bool compact = false) {
  JsonSchemaOptions options;
  options.compact = compact;
  return grammar_accepts(json_schema_grammar(nlohmann::ordered_json::parse(schema), options), text);
}

inline Grammar regex_grammar(const std::string& pattern, bool search = false) {
  GrammarBuilder b;
  const int root = b.declare("root");
  b.define(root, regex_to_expr(pattern, [](const CharClass& c) { return utf8_expr(c); }, search));
  return b.build(root);
}

}  // namespace lemma::grammar::testing
