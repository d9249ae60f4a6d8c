// Internal to the parser (parser.cpp: statements, parse_expression.cpp: expressions): the
// recursive-descent Parser over the lexer's tokens. Not part of the library's interface.
#pragma once

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string>
#include <vector>

#include "lemma/tokenizer/jinja/ast.h"
#include "lemma/tokenizer/jinja/evaluator.h"
#include "lemma/tokenizer/jinja/lexer.h"

namespace lemma::jinja::detail {

using T = Token::Type;

// Nesting limits keep hostile templates from exhausting the stack (Jinja2 has Python's).
constexpr int kMaxExpressionDepth = 100;
constexpr int kMaxBlockDepth = 100;

inline int64_t parse_int_literal(const Token& t) {
  int64_t v = 0;
  auto res = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (res.ec != std::errc() || res.ptr != t.text.data() + t.text.size()) {
    throw SyntaxError{"integer literal too large: " + t.text, t.line};
  }
  return v;
}

inline ExprPtr make(Expr::Kind kind, int line, std::string name = {}) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  e->name = std::move(name);
  return e;
}

inline StmtPtr make_stmt(Stmt::Kind kind, int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->line = line;
  return s;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse_template() {
    std::string end;
    return parse_until({}, &end);
  }

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  Token next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }

  bool is_op(const char* op) const { return cur().type == T::kOp && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == T::kName && cur().text == n; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    ++pos_;
    return true;
  }
  [[noreturn]] void fail(const std::string& message) const { throw SyntaxError{message, cur().line}; }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case T::kEof: return "end of template";
      case T::kBlockEnd: return "end of statement block";
      case T::kVarEnd: return "end of print statement";
      case T::kText: return "template data";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(std::string("expected token '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != T::kName) fail("expected name, got " + describe(cur()));
    return next().text;
  }
  void expect_block_end() {
    if (cur().type != T::kBlockEnd) fail("expected end of statement block, got " + describe(cur()));
    ++pos_;
  }

  // Statements until a block tag whose name is in `ends` (its name is consumed, stored in *found).
  Body parse_until(std::initializer_list<const char*> ends, std::string* found);
  struct DepthGuard {
    int& depth;
    DepthGuard(int& d, int limit, const Parser& p) : depth(d) {
      if (++depth > limit) p.fail("template nesting too deep");
    }
    ~DepthGuard() { --depth; }
  };
  StmtPtr parse_statement();
  StmtPtr parse_if(int line);
  StmtPtr parse_for(int line);
  StmtPtr parse_set(int line);
  void parse_params(std::vector<std::pair<std::string, ExprPtr>>& params);
  StmtPtr parse_macro(int line);
  StmtPtr parse_call_block(int line);
  void parse_filter_chain(std::vector<ExprPtr>& filters);

  // ---- expressions (Jinja2 precedence) ----
  ExprPtr parse_tuple_or_expression(bool with_condexpr = true);
  ExprPtr parse_expression();
  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter = true);
  ExprPtr parse_primary();
  ExprPtr literal(Value v, int line);
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node, int line);
  void parse_call_args(Expr& call);
  ExprPtr parse_call(ExprPtr callee);
  void parse_filter_name_and_args(Expr& f);
  ExprPtr parse_filter_expr(ExprPtr node);

  // A test takes one bare argument (`x is divisibleby 3`) when a primary follows that is not
  // an operator keyword.
  bool starts_test_argument() const;

  // Jinja2 rejects unknown filters and tests when compiling, except in "soft" frames (an `if`
  // test or body, up to the next for/macro/call/filter/set/with/generation body).
  struct FrameGuard {
    bool& soft;
    bool saved;
    FrameGuard(bool& s, bool value) : soft(s), saved(s) { s = value; }
    ~FrameGuard() { soft = saved; }
  };
  void check_known(const std::string& name, bool is_filter, int line) const {
    if (soft_ || (is_filter ? has_filter(name) : has_test(name))) return;
    throw SyntaxError{std::string("No ") + (is_filter ? "filter" : "test") + " named '" + name + "'.", line,
                      "TemplateAssertionError"};
  }

  bool soft_ = false;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int expr_depth_ = 0;
  int block_depth_ = 0;
};

}  // namespace lemma::jinja::detail
