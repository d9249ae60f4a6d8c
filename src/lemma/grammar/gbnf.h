// GBNF, llama.cpp's grammar notation (llama-server's `grammar` field), compiled into a Grammar.
//
//   root   ::= greeting " " name{1,3}   # the start rule is always `root`
//   name   ::= [A-Z] [a-z]* | "anon"
//
// Rules `name ::= alternatives` (a rule ends at the end of its line; inside parentheses, and after
// `::=` or `|`, newlines are free), sequences, `|`, `( )`, `* + ?`, `{m}` `{m,}` `{m,n}` `{,n}`,
// string literals and character classes (`[a-z]`, `[^"\\]`) with escapes \n \t \r \\ \" \[ \]
// \xHH \uHHHH \UHHHHHHHH, `.` (any character), references to rules defined anywhere, `#` comments.
// Literals, classes and `.` are over Unicode code points, matched as UTF-8.
#pragma once

#include <string_view>

#include "lemma/grammar/grammar.h"

namespace lemma::grammar {

// Throws InvalidArgument naming the line and column and what was expected there, a rule that is
// referenced but never defined (or defined twice), a left-recursive rule (which a left-to-right
// recognizer cannot run), or a missing `root`.
Grammar gbnf_grammar(std::string_view text);

}  // namespace lemma::grammar
