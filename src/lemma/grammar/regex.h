// Regular expressions (the ECMA-262 subset JSON Schema's `pattern` uses: literals, classes,
// escapes \d \w \s, '.', groups, alternation, ? * + {m,n}, ^ and $ at the ends) -> grammar.
// Characters are mapped through `char_expr`, so the same regex can describe raw text or the
// inside of a JSON string (where '"' must appear escaped). Anything else (lookaround,
// backreferences, \b, \p{..}, anchors in the middle) throws Unsupported naming it.
#pragma once

#include <functional>
#include <string_view>

#include "lemma/grammar/char_class.h"
#include "lemma/grammar/expr.h"

namespace lemma::grammar {

using CharExpr = std::function<ExprPtr(const CharClass&)>;

// search = true: JSON Schema semantics, the regex may match anywhere unless anchored by ^ / $.
// search = false: the whole text must match.
ExprPtr regex_to_expr(std::string_view pattern, const CharExpr& char_expr, bool search);

}  // namespace lemma::grammar
