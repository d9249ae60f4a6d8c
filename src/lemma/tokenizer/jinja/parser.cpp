// Statement parsing ({% if %}, {% for %}, {% set %}, {% macro %}, ...) and the entry point.
#include "lemma/tokenizer/jinja/parser.h"

#include "lemma/tokenizer/jinja/parser_impl.h"

namespace lemma::jinja {
namespace detail {

// Statements until a block tag whose name is in `ends` (its name is consumed, stored in *found).
Body Parser::parse_until(std::initializer_list<const char*> ends, std::string* found) {
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

StmtPtr Parser::parse_statement() {
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

StmtPtr Parser::parse_if(int line) {
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

StmtPtr Parser::parse_for(int line) {
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

StmtPtr Parser::parse_set(int line) {
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

void Parser::parse_params(std::vector<std::pair<std::string, ExprPtr>>& params) {
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

StmtPtr Parser::parse_macro(int line) {
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

StmtPtr Parser::parse_call_block(int line) {
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

void Parser::parse_filter_chain(std::vector<ExprPtr>& filters) {
  do {
    auto f = make(Expr::Kind::kFilter, cur().line);
    f->args.push_back(nullptr);
    parse_filter_name_and_args(*f);
    filters.push_back(std::move(f));
  } while (accept_op("|"));
}

}  // namespace detail

Program parse(const std::string& source, std::string name) {
  Program program;
  program.name = std::move(name);
  detail::Parser parser(tokenize(source));
  program.body = parser.parse_template();
  return program;
}

}  // namespace lemma::jinja
