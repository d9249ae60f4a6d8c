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
// Token references (llama.cpp's): `<[1234]>` is exactly token 1234; `<text>` (e.g. `<|im_end|>`,
// `<think>`) is the token whose text that is, brackets included: the special token of that text,
// else a text token spelling exactly it (token_constraint.h: resolve_tokens binds names and checks
// ids against the vocabulary; an unknown one is an error naming it). `!<[1234]>` / `!<text>` is any
// one text token but that one: never a special token or an end id (those come only where a
// reference names them, and ending stays with the grammar's completion).
//
//   root ::= <[1000]> thinking <[1001]> answer    # e.g. 1000 = <think>, 1001 = </think>
//   thinking ::= !<[1001]>*
#pragma once

#include <string_view>

#include "lemma/grammar/grammar.h"

namespace lemma::grammar {

// Throws InvalidArgument naming the line and column and what was expected there, a rule that is
// referenced but never defined (or defined twice), a left-recursive rule (which a left-to-right
// recognizer cannot run), or a missing `root`.
Grammar gbnf_grammar(std::string_view text);

}  // namespace lemma::grammar
