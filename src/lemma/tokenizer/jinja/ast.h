// Jinja syntax tree: expressions and statements produced by the parser, walked by the evaluator.
// Immutable after parsing; shared by every render.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lemma/tokenizer/jinja/value.h"

namespace lemma::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // literal
    kName,       // name
    kList,       // args = items
    kTuple,      // args = items (a tuple evaluates to a list)
    kDict,       // args = key0, value0, key1, value1, ...
    kGetAttr,    // args[0].name
    kGetItem,    // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (null = omitted)
    kCall,       // args[0](args[1..], kwargs)
    kFilter,     // args[0] | name(args[1..], kwargs); args[0] is null inside filter blocks
    kTest,       // args[0] is [not] name(args[1..])
    kUnary,      // name in {"not", "-", "+"}, args[0]
    kBinary,     // name = operator, args[0], args[1]
    kCompare,    // chained comparison: args[0] then kwargs = (operator, operand)...
    kCondition,  // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0;
  std::string name;
  Value literal;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;  // `is not`
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind { kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kCallBlock, kFilterBlock, kBreak, kContinue, kScope, kWith };
  Kind kind;
  int line = 0;
  std::string text;                  // kText data; kMacro name; kSet namespace attribute ("" = plain names)
  ExprPtr expr;                      // kOutput value; kSet value; kFor iterable; kCallBlock call
  std::vector<std::string> targets;  // kFor loop variables; kSet/kSetBlock names (or the namespace)
  ExprPtr condition;                 // kFor `if` filter
  bool recursive = false;            // kFor
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf: (condition, body) for if/elif
  Body body, else_body;              // kScope: {% generation %} body
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro / kCallBlock parameters (default may be null);
                                                        // kWith assignments
  std::vector<ExprPtr> filters;      // kSetBlock / kFilterBlock filter chain (kFilter with null subject)
};

struct Program {
  std::string name;
  Body body;
};

}  // namespace lemma::jinja
