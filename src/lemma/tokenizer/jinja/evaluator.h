// Tree-walking evaluator: renders a Program against top-level variables. One Evaluator per
// render (it owns the scopes), so concurrent renders of one Program share nothing mutable.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "lemma/tokenizer/jinja/ast.h"
#include "lemma/tokenizer/jinja/value.h"

namespace lemma::jinja {

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  const Value* lookup(const std::string& name) const;
};

// Limits that keep a hostile template from exhausting the stack, memory or time; real chat
// templates stay far below them.
constexpr int kMaxCallDepth = 200;
constexpr int64_t kMaxLoopIterations = 10'000'000;
constexpr size_t kMaxOutputBytes = size_t{256} << 20;

class Evaluator {
 public:
  Evaluator(const Program& program, std::time_t now) : program_(program), now_(now) {}

  // Renders the program; throws RenderError (with line) on failure. The marks of the result
  // are the bytes that came from marked input strings (marks.h).
  MarkedText render(Dict variables);

  // Calls any callable value (macro, global, bound method); raises for non-callables.
  Value call(const Value& callee, const CallArgs& args);
  std::time_t now() const { return now_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using ScopePtr = std::shared_ptr<Scope>;

  Flow exec_body(const Body& body, const ScopePtr& scope, MarkedText& out);
  Flow exec(const Stmt& stmt, const ScopePtr& scope, MarkedText& out);
  Flow exec_for(const Stmt& stmt, const ScopePtr& scope, MarkedText& out);
  void run_loop(const Stmt& stmt, const ScopePtr& scope, const Value& iterable, int64_t depth, MarkedText& out);
  void exec_set(const Stmt& stmt, const ScopePtr& scope, MarkedText& out);
  Value make_macro(const Stmt& stmt, const ScopePtr& scope);
  Value apply_filter_chain(const std::vector<ExprPtr>& filters, Value value, const ScopePtr& scope);

  Value eval(const Expr& expr, const ScopePtr& scope);
  Value eval_inner(const Expr& expr, const ScopePtr& scope);
  Value eval_binary(const Expr& expr, const ScopePtr& scope);
  CallArgs eval_args(const Expr& expr, size_t first, const ScopePtr& scope);

  const Program& program_;
  std::time_t now_;
  ScopePtr globals_;
  int call_depth_ = 0;         // nested macro calls (limit: kMaxCallDepth)
  int64_t loop_iterations_ = 0;  // over the whole render (limit: kMaxLoopIterations)
};

// Binary operators with Python semantics ("+", "-", "*", "/", "//", "%", "**", "~", "==", ...).
Value binary_op(const std::string& op, const Value& a, const Value& b);
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
bool contains(const Value& container, const Value& item);
[[noreturn]] void raise_undefined(const Value& undefined);

// Builtins (filters.cpp, tests.cpp, methods.cpp, globals in evaluator.cpp).
Value apply_filter(Evaluator& ev, const std::string& name, const Value& subject, const CallArgs& args);
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
bool apply_test(Evaluator& ev, const std::string& name, const Value& subject, const CallArgs& args);
// Bound str/list/dict method `name` of `obj` (sandbox-forbidden mutators come back as an
// undefined that raises SecurityError when called), or nullopt when there is none.
std::optional<Value> bound_method(const Value& obj, const std::string& name);
void add_globals(Dict& globals);
// Python's str % args.
// With `escape` (a Markup format string) %s arguments that are not Markup are HTML-escaped.
std::string percent_format(const std::string& format, const Value& args, bool escape = false);

}  // namespace lemma::jinja
