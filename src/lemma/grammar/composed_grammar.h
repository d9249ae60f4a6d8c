// Grammars built from expressions that call whole grammars compiled elsewhere: e.g. a tool-call
// format whose calls are JSON Schema grammars, after free text. Each embedded grammar becomes one
// rule (its root rule, its other rules and token references carried along), so its states, masks
// and forced bytes are exactly those of the grammar alone. Not thread-safe; the result is plain data.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lemma/grammar/expr.h"
#include "lemma/grammar/grammar.h"

namespace lemma::grammar {

class ComposedGrammarBuilder {
 public:
  // As GrammarBuilder: declare (so rules can call each other), define each once.
  int declare(std::string name) { return builder_.declare(std::move(name)); }
  void define(int rule, ExprPtr body) { builder_.define(rule, std::move(body)); }
  // A rule that reads what `grammar`'s root reads; call it with rule_ref().
  int embed(Grammar grammar);
  // Throws InvalidArgument naming a rule declared but never defined.
  Grammar build(int root);

 private:
  GrammarBuilder builder_;
  std::vector<std::pair<int, Grammar>> embedded_;  // (placeholder rule, grammar)
};

}  // namespace lemma::grammar
