#include "lemma/grammar/text_grammars.h"

#include "lemma/base/error.h"
#include "lemma/grammar/regex.h"

namespace lemma::grammar {

namespace {

Grammar single_rule(ExprPtr body) {
  GrammarBuilder b;
  const int root = b.declare("root");
  b.define(root, std::move(body));
  return b.build(root);
}

}  // namespace

Grammar choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) fail<InvalidArgument>("a choice list needs at least one choice");
  std::vector<ExprPtr> items;
  items.reserve(choices.size());
  for (const std::string& c : choices) items.push_back(literal(c));
  return single_rule(alt(std::move(items)));
}

Grammar regex_grammar(std::string_view pattern) {
  return single_rule(regex_to_expr(pattern, [](const CharClass& c) { return utf8_expr(c); }, /*search=*/false));
}

}  // namespace lemma::grammar
