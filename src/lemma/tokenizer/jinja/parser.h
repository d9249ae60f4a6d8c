// Jinja parser: tokens -> Program (statements and expressions with Jinja2's precedence).
#pragma once

#include <string>

#include "lemma/tokenizer/jinja/ast.h"
#include "lemma/tokenizer/jinja/lexer.h"

namespace lemma::jinja {

// Throws SyntaxError (message and line) on malformed templates.
Program parse(const std::string& source, std::string name);

}  // namespace lemma::jinja
