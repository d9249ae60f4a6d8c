#include "lemma/tokenizer/jinja/parser.h"

#include "lemma/tokenizer/jinja/evaluator.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>

namespace lemma::jinja {
namespace {

using T = Token::Type;

// Nesting limits keep hostile templates from exhausting the stack (Jinja2 has Python's).
constexpr int kMaxExpressionDepth = 100;
constexpr int kMaxBlockDepth = 100;

int64_t parse_int_literal(const Token& t) {
  int64_t v = 0;
  auto res = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (res.ec != std::errc() || res.ptr != t.text.data() + t.text.size()) {
    throw SyntaxError{"integer literal too large: " + t.text, t.line};
  }
  return v;
}

ExprPtr make(Expr::Kind kind, int line, std::string name = {}) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  e->name = std::move(name);
  return e;
}

StmtPtr make_stmt(Stmt::Kind kind, int line) {
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
  Body parse_until(std::initializer_list<const char*> ends, std::string* found) {
    Body body;
    for (;;) {
      const Token& t = cur();
      if (t.type == T::kEof) {
        if (ends.size() != 0) {
          std::string names;
          for (const char* e : ends) names += (names.empty() ? "'" : " or '") + std::string(e) + "'";
          fail("Unexpected end of template. Jinja was looking for the following tags: " + names + ".");
        }
        return body;
      }
      if (t.type == T::kText) {
        auto s = make_stmt(Stmt::Kind::kText, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        ++pos_;
      } else if (t.type == T::kVarBegin) {
        ++pos_;
        auto s = make_stmt(Stmt::Kind::kOutput, cur().line);
        s->expr = parse_expression();
        if (cur().type != T::kVarEnd) fail("expected end of print statement, got " + describe(cur()));
        ++pos_;
        body.push_back(std::move(s));
      } else if (t.type == T::kBlockBegin) {
        const Token& tag = peek();
        if (tag.type != T::kName) {
          ++pos_;
          fail("tag name expected");
        }
        for (const char* e : ends) {
          if (tag.text == e) {
            pos_ += 2;
            *found = e;
            return body;
          }
        }
        ++pos_;
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  struct DepthGuard {
    int& depth;
    DepthGuard(int& d, int limit, const Parser& p) : depth(d) {
      if (++depth > limit) p.fail("template nesting too deep");
    }
    ~DepthGuard() { --depth; }
  };

  StmtPtr parse_statement() {
    DepthGuard guard(block_depth_, kMaxBlockDepth, *this);
    int line = cur().line;
    std::string tag = next().text;
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "macro") return parse_macro(line);
    if (tag == "call") return parse_call_block(line);
    if (tag == "filter") {
      FrameGuard frame(soft_, false);
      auto s = make_stmt(Stmt::Kind::kFilterBlock, line);
      parse_filter_chain(s->filters);
      expect_block_end();
      std::string end;
      s->body = parse_until({"endfilter"}, &end);
      expect_block_end();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      expect_block_end();
      return make_stmt(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, line);
    }
    if (tag == "with") {
      auto s = make_stmt(Stmt::Kind::kWith, line);
      while (cur().type != T::kBlockEnd) {
        if (!s->params.empty()) expect_op(",");
        std::string name = expect_name();
        expect_op("=");
        s->params.emplace_back(std::move(name), parse_expression());
      }
      expect_block_end();
      FrameGuard frame(soft_, false);
      std::string end;
      s->body = parse_until({"endwith"}, &end);
      expect_block_end();
      return s;
    }
    if (tag == "generation") {
      FrameGuard frame(soft_, false);
      auto s = make_stmt(Stmt::Kind::kScope, line);
      expect_block_end();
      std::string end;
      s->body = parse_until({"endgeneration"}, &end);
      expect_block_end();
      return s;
    }
    --pos_;
    fail("Encountered unknown tag '" + tag + "'.");
  }

  StmtPtr parse_if(int line) {
    FrameGuard frame(soft_, true);
    auto s = make_stmt(Stmt::Kind::kIf, line);
    ExprPtr cond = parse_tuple_or_expression();
    for (;;) {
      expect_block_end();
      std::string end;
      Body body = parse_until({"elif", "else", "endif"}, &end);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = parse_tuple_or_expression();
        continue;
      }
      if (end == "else") {
        expect_block_end();
        s->else_body = parse_until({"endif"}, &end);
      }
      expect_block_end();
      return s;
    }
  }

  StmtPtr parse_for(int line) {
    auto s = make_stmt(Stmt::Kind::kFor, line);
    s->targets.push_back(expect_name());
    while (accept_op(",")) s->targets.push_back(expect_name());
    if (!accept_name("in")) fail("expected 'in', got " + describe(cur()));
    s->expr = parse_tuple_or_expression(/*with_condexpr=*/false);
    FrameGuard frame(soft_, false);
    if (accept_name("if")) s->condition = parse_expression();
    if (accept_name("recursive")) s->recursive = true;
    expect_block_end();
    std::string end;
    s->body = parse_until({"endfor", "else"}, &end);
    if (end == "else") {
      expect_block_end();
      s->else_body = parse_until({"endfor"}, &end);
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(int line) {
    std::string first = expect_name();
    if (accept_op(".")) {
      auto s = make_stmt(Stmt::Kind::kSet, line);
      s->targets.push_back(first);
      s->text = expect_name();
      expect_op("=");
      s->expr = parse_tuple_or_expression();
      expect_block_end();
      return s;
    }
    std::vector<std::string> targets{first};
    while (accept_op(",")) targets.push_back(expect_name());
    if (accept_op("=")) {
      auto s = make_stmt(Stmt::Kind::kSet, line);
      s->targets = std::move(targets);
      s->expr = parse_tuple_or_expression();
      expect_block_end();
      return s;
    }
    FrameGuard frame(soft_, false);
    auto s = make_stmt(Stmt::Kind::kSetBlock, line);
    s->targets = std::move(targets);
    if (accept_op("|")) parse_filter_chain(s->filters);
    expect_block_end();
    std::string end;
    s->body = parse_until({"endset"}, &end);
    expect_block_end();
    return s;
  }

  void parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
    expect_op("(");
    while (!accept_op(")")) {
      if (!params.empty()) expect_op(",");
      if (accept_op(")")) break;
      std::string name = expect_name();
      ExprPtr def;
      if (accept_op("=")) def = parse_expression();
      params.emplace_back(std::move(name), std::move(def));
    }
  }

  StmtPtr parse_macro(int line) {
    FrameGuard frame(soft_, false);
    auto s = make_stmt(Stmt::Kind::kMacro, line);
    s->text = expect_name();
    parse_params(s->params);
    expect_block_end();
    std::string end;
    s->body = parse_until({"endmacro"}, &end);
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(int line) {
    auto s = make_stmt(Stmt::Kind::kCallBlock, line);
    if (is_op("(")) {
      FrameGuard frame(soft_, false);
      parse_params(s->params);
    }
    s->expr = parse_expression();
    if (s->expr->kind != Expr::Kind::kCall) fail("expected call");
    expect_block_end();
    FrameGuard frame(soft_, false);
    std::string end;
    s->body = parse_until({"endcall"}, &end);
    expect_block_end();
    return s;
  }

  void parse_filter_chain(std::vector<ExprPtr>& filters) {
    do {
      auto f = make(Expr::Kind::kFilter, cur().line);
      f->args.push_back(nullptr);
      parse_filter_name_and_args(*f);
      filters.push_back(std::move(f));
    } while (accept_op("|"));
  }

  // ---- expressions (Jinja2 precedence) ----
  ExprPtr parse_tuple_or_expression(bool with_condexpr = true) {
    int line = cur().line;
    ExprPtr first = with_condexpr ? parse_expression() : parse_or();
    if (!is_op(",")) return first;
    auto t = make(Expr::Kind::kTuple, line);
    t->args.push_back(std::move(first));
    while (accept_op(",")) {
      if (cur().type == T::kBlockEnd || cur().type == T::kVarEnd) break;
      t->args.push_back(with_condexpr ? parse_expression() : parse_or());
    }
    return t;
  }

  ExprPtr parse_expression() {
    ExprPtr e = parse_or();
    while (is_name("if")) {
      auto c = make(Expr::Kind::kCondition, next().line);
      ExprPtr cond = parse_or();
      ExprPtr otherwise = accept_name("else") ? parse_expression() : nullptr;
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(otherwise));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto b = make(Expr::Kind::kBinary, line, op);
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
      int line = next().line;
      l = binary("or", std::move(l), parse_and(), line);
    }
    return l;
  }

  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
      int line = next().line;
      l = binary("and", std::move(l), parse_not(), line);
    }
    return l;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      int line = next().line;
      auto u = make(Expr::Kind::kUnary, line, "not");
      u->args.push_back(parse_not());
      return u;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int start_line = cur().line;
    ExprPtr first = parse_math1();
    std::vector<std::pair<std::string, ExprPtr>> rest;
    for (;;) {
      int line = cur().line;
      std::string op;
      if (cur().type == T::kOp && (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
                                   cur().text == "<=" || cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        ++pos_;
        op = "in";
      } else if (is_name("not") && peek().type == T::kName && peek().text == "in") {
        pos_ += 2;
        op = "not in";
      } else {
        break;
      }
      (void)line;
      rest.emplace_back(std::move(op), parse_math1());
    }
    if (rest.empty()) return first;
    if (rest.size() == 1) return binary(rest[0].first, std::move(first), std::move(rest[0].second), start_line);
    auto chain = make(Expr::Kind::kCompare, start_line);
    chain->args.push_back(std::move(first));
    chain->kwargs = std::move(rest);
    return chain;
  }

  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      Token t = next();
      l = binary(t.text, std::move(l), parse_concat(), t.line);
    }
    return l;
  }

  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      Token t = next();
      l = binary("~", std::move(l), parse_math2(), t.line);
    }
    return l;
  }

  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      Token t = next();
      l = binary(t.text, std::move(l), parse_pow(), t.line);
    }
    return l;
  }

  ExprPtr parse_pow() {
    ExprPtr l = parse_unary();
    while (is_op("**")) {
      Token t = next();
      l = binary("**", std::move(l), parse_unary(), t.line);
    }
    return l;
  }

  ExprPtr parse_unary(bool with_filter = true) {
    DepthGuard guard(expr_depth_, kMaxExpressionDepth, *this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      Token t = next();
      node = make(Expr::Kind::kUnary, t.line, t.text);
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token t = cur();
    switch (t.type) {
      case T::kName: {
        ++pos_;
        if (t.text == "true" || t.text == "True") return literal(Value(true), t.line);
        if (t.text == "false" || t.text == "False") return literal(Value(false), t.line);
        if (t.text == "none" || t.text == "None") return literal(Value::none(), t.line);
        return make(Expr::Kind::kName, t.line, t.text);
      }
      case T::kString: {
        std::string s;
        while (cur().type == T::kString) s += next().text;
        return literal(Value(s), t.line);
      }
      case T::kInt:
        ++pos_;
        return literal(Value(parse_int_literal(t)), t.line);
      case T::kFloat:
        ++pos_;
        return literal(Value(std::strtod(t.text.c_str(), nullptr)), t.line);
      case T::kOp:
        if (t.text == "(") {
          ++pos_;
          if (accept_op(")")) return make(Expr::Kind::kTuple, t.line);
          ExprPtr e = parse_expression();
          if (is_op(",")) {
            auto tup = make(Expr::Kind::kTuple, t.line);
            tup->args.push_back(std::move(e));
            while (accept_op(",")) {
              if (is_op(")")) break;
              tup->args.push_back(parse_expression());
            }
            e = std::move(tup);
          }
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          ++pos_;
          auto l = make(Expr::Kind::kList, t.line);
          while (!accept_op("]")) {
            if (!l->args.empty()) expect_op(",");
            if (accept_op("]")) break;
            l->args.push_back(parse_expression());
          }
          return l;
        }
        if (t.text == "{") {
          ++pos_;
          auto d = make(Expr::Kind::kDict, t.line);
          while (!accept_op("}")) {
            if (!d->args.empty()) expect_op(",");
            if (accept_op("}")) break;
            d->args.push_back(parse_expression());
            expect_op(":");
            d->args.push_back(parse_expression());
          }
          return d;
        }
        break;
      default: break;
    }
    fail("unexpected " + describe(t));
  }

  ExprPtr literal(Value v, int line) {
    auto e = make(Expr::Kind::kLiteral, line);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    for (;;) {
      if (is_op(".")) {
        int line = next().line;
        if (cur().type == T::kInt) {
          auto g = make(Expr::Kind::kGetItem, line);
          g->args.push_back(std::move(node));
          g->args.push_back(literal(Value(parse_int_literal(next())), line));
          node = std::move(g);
        } else {
          auto g = make(Expr::Kind::kGetAttr, line, expect_name());
          g->args.push_back(std::move(node));
          node = std::move(g);
        }
      } else if (is_op("[")) {
        int line = next().line;
        node = parse_subscript(std::move(node), line);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node, int line) {
    ExprPtr parts[3];
    int idx = 0;
    bool is_slice = false;
    while (!is_op("]")) {
      if (accept_op(":")) {
        is_slice = true;
        if (++idx > 2) fail("invalid slice");
        continue;
      }
      if (parts[idx]) fail("expected ']'");
      parts[idx] = parse_expression();
    }
    expect_op("]");
    if (!is_slice) {
      if (!parts[0]) fail("expected subscript");
      auto g = make(Expr::Kind::kGetItem, line);
      g->args.push_back(std::move(node));
      g->args.push_back(std::move(parts[0]));
      return g;
    }
    auto s = make(Expr::Kind::kSlice, line);
    s->args.push_back(std::move(node));
    for (auto& p : parts) s->args.push_back(std::move(p));
    return s;
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    bool first = true;
    while (!accept_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (accept_op(")")) break;
      if (cur().type == T::kName && peek().type == T::kOp && peek().text == "=") {
        std::string key = next().text;
        ++pos_;
        call.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!call.kwargs.empty()) fail("positional argument after keyword argument");
        call.args.push_back(parse_expression());
      }
    }
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto c = make(Expr::Kind::kCall, cur().line);
    c->args.push_back(std::move(callee));
    parse_call_args(*c);
    return c;
  }

  void parse_filter_name_and_args(Expr& f) {
    const int line = cur().line;
    std::string name = expect_name();
    while (accept_op(".")) name += "." + expect_name();
    check_known(name, true, line);
    f.name = name;
    if (is_op("(")) parse_call_args(f);
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    for (;;) {
      if (is_op("|")) {
        auto f = make(Expr::Kind::kFilter, next().line);
        f->args.push_back(std::move(node));
        parse_filter_name_and_args(*f);
        node = std::move(f);
      } else if (is_name("is")) {
        auto t = make(Expr::Kind::kTest, next().line);
        if (accept_name("not")) t->negated = true;
        const int name_line = cur().line;
        std::string name = expect_name();
        while (accept_op(".")) name += "." + expect_name();
        check_known(name, false, name_line);
        t->name = name;
        t->args.push_back(std::move(node));
        if (is_op("(")) {
          parse_call_args(*t);
        } else if (starts_test_argument()) {
          ExprPtr arg = parse_primary();
          arg = parse_postfix(std::move(arg));
          t->args.push_back(std::move(arg));
        }
        node = std::move(t);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  // A test takes one bare argument (`x is divisibleby 3`) when a primary follows that is not
  // an operator keyword.
  bool starts_test_argument() const {
    const Token& t = cur();
    if (t.type == T::kString || t.type == T::kInt || t.type == T::kFloat) return true;
    if (t.type == T::kOp) return t.text == "[" || t.text == "{";
    if (t.type == T::kName) {
      static const char* const kStop[] = {"else", "or", "and", "if", "is", "in", "not", "recursive"};
      for (const char* s : kStop) {
        if (t.text == s) return false;
      }
      return true;
    }
    return false;
  }

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

}  // namespace

Program parse(const std::string& source, std::string name) {
  Program program;
  program.name = std::move(name);
  Parser parser(tokenize(source));
  program.body = parser.parse_template();
  return program;
}

}  // namespace lemma::jinja
