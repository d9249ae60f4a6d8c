// Expression parsing with Jinja2's precedence: conditional, or, and, not, comparisons, + -, ~,
// * / // %, **, unary, then postfix (.attr, [index/slice], call) and filters/tests.
#include "lemma/tokenizer/jinja/parser_impl.h"

#include <cstdlib>

namespace lemma::jinja::detail {

// ---- expressions (Jinja2 precedence) ----
ExprPtr Parser::parse_tuple_or_expression(bool with_condexpr) {
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

ExprPtr Parser::parse_expression() {
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

ExprPtr Parser::binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
  auto b = make(Expr::Kind::kBinary, line, op);
  b->args.push_back(std::move(l));
  b->args.push_back(std::move(r));
  return b;
}

ExprPtr Parser::parse_or() {
  ExprPtr l = parse_and();
  while (is_name("or")) {
    int line = next().line;
    l = binary("or", std::move(l), parse_and(), line);
  }
  return l;
}

ExprPtr Parser::parse_and() {
  ExprPtr l = parse_not();
  while (is_name("and")) {
    int line = next().line;
    l = binary("and", std::move(l), parse_not(), line);
  }
  return l;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    int line = next().line;
    auto u = make(Expr::Kind::kUnary, line, "not");
    u->args.push_back(parse_not());
    return u;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
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

ExprPtr Parser::parse_math1() {
  ExprPtr l = parse_concat();
  while (is_op("+") || is_op("-")) {
    Token t = next();
    l = binary(t.text, std::move(l), parse_concat(), t.line);
  }
  return l;
}

ExprPtr Parser::parse_concat() {
  ExprPtr l = parse_math2();
  while (is_op("~")) {
    Token t = next();
    l = binary("~", std::move(l), parse_math2(), t.line);
  }
  return l;
}

ExprPtr Parser::parse_math2() {
  ExprPtr l = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    Token t = next();
    l = binary(t.text, std::move(l), parse_pow(), t.line);
  }
  return l;
}

ExprPtr Parser::parse_pow() {
  ExprPtr l = parse_unary();
  while (is_op("**")) {
    Token t = next();
    l = binary("**", std::move(l), parse_unary(), t.line);
  }
  return l;
}

ExprPtr Parser::parse_unary(bool with_filter) {
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

ExprPtr Parser::parse_primary() {
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

ExprPtr Parser::literal(Value v, int line) {
  auto e = make(Expr::Kind::kLiteral, line);
  e->literal = std::move(v);
  return e;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
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

ExprPtr Parser::parse_subscript(ExprPtr node, int line) {
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

void Parser::parse_call_args(Expr& call) {
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

ExprPtr Parser::parse_call(ExprPtr callee) {
  auto c = make(Expr::Kind::kCall, cur().line);
  c->args.push_back(std::move(callee));
  parse_call_args(*c);
  return c;
}

void Parser::parse_filter_name_and_args(Expr& f) {
  const int line = cur().line;
  std::string name = expect_name();
  while (accept_op(".")) {
    name += '.';
    name += expect_name();
  }
  check_known(name, true, line);
  f.name = name;
  if (is_op("(")) parse_call_args(f);
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
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
      while (accept_op(".")) {
        name += '.';
        name += expect_name();
      }
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
bool Parser::starts_test_argument() const {
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

}  // namespace lemma::jinja::detail
