// Jinja lexer: template source -> tokens, applying Jinja2's whitespace control exactly
// (`-`/`+` markers, trim_blocks, lstrip_blocks, dropping one trailing newline).
#pragma once

#include <string>
#include <vector>

namespace lemma::jinja {

struct Token {
  enum class Type { kText, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEof };
  Type type;
  std::string text;  // text data, name, decoded string literal, number digits, or operator
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// A malformed template: what went wrong and on which line (the lexer and parser throw it).
struct SyntaxError {
  std::string message;
  int line;
  std::string type = "TemplateSyntaxError";  // or TemplateAssertionError (unknown filter/test)
};

// Throws SyntaxError.
std::vector<Token> tokenize(const std::string& source, const LexOptions& options = {});

}  // namespace lemma::jinja
