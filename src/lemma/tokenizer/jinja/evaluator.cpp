#include "lemma/tokenizer/jinja/evaluator.h"

#include "lemma/tokenizer/jinja/marks.h"

namespace lemma::jinja {
namespace {

constexpr const char* kCallKey = "__call__";  // makes a dict (a recursive `loop`) callable

std::string undefined_hint(const std::string& what) { return "UndefinedError: " + what; }

}  // namespace

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

MarkedText Evaluator::render(Dict variables) {
  globals_ = std::make_shared<Scope>();
  Dict builtins;
  add_globals(builtins);
  for (auto& [k, v] : builtins.items) globals_->vars[k.str()] = std::move(v);
  for (auto& [k, v] : variables.items) globals_->vars[k.str()] = std::move(v);
  auto top = std::make_shared<Scope>();
  top->parent = globals_;
  MarkedText out;
  exec_body(program_.body, top, out);
  return out;
}

Value Evaluator::call(const Value& callee, const CallArgs& args) {
  if (callee.is_callable()) return callee.fn().fn(*this, args);
  if (callee.is_dict()) {  // a recursive loop's `loop(children)`
    const Value* fn = callee.dict_items().get(kCallKey);
    if (fn && fn->is_callable()) return fn->fn().fn(*this, args);
  }
  if (callee.is_undefined()) raise_undefined(callee);
  raise("TypeError: '" + callee.type_name() + "' object is not callable");
}

Evaluator::Flow Evaluator::exec_body(const Body& body, const ScopePtr& scope, MarkedText& out) {
  for (const auto& stmt : body) {
    Flow f = exec(*stmt, scope, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec(const Stmt& stmt, const ScopePtr& scope, MarkedText& out) {
  try {
    switch (stmt.kind) {
      case Stmt::Kind::kText:
      case Stmt::Kind::kOutput:
        if (stmt.kind == Stmt::Kind::kText) out.append(stmt.text, false);
        else append_value(out, eval(*stmt.expr, scope));
        if (out.size() > kMaxOutputBytes) raise("MemoryError: rendered output exceeds 256 MiB");
        return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : stmt.branches) {
          if (eval(*cond, scope).truthy()) return exec_body(body, scope, out);
        }
        return exec_body(stmt.else_body, scope, out);
      case Stmt::Kind::kFor: return exec_for(stmt, scope, out);
      case Stmt::Kind::kSet:
      case Stmt::Kind::kSetBlock: exec_set(stmt, scope, out); return Flow::kNormal;
      case Stmt::Kind::kMacro: scope->vars[stmt.text] = make_macro(stmt, scope); return Flow::kNormal;
      case Stmt::Kind::kCallBlock: {
        Value caller = Value::callable("caller", [this, &stmt, scope](Evaluator&, const CallArgs& args) {
          auto inner = std::make_shared<Scope>();
          inner->parent = scope;
          for (size_t i = 0; i < stmt.params.size(); ++i) {
            const Value* v = args.get(i, stmt.params[i].first);
            inner->vars[stmt.params[i].first] = v ? *v : stmt.params[i].second ? eval(*stmt.params[i].second, inner) : Value::undefined();
          }
          MarkedText body;
          exec_body(stmt.body, inner, body);
          return Value(std::move(body));
        });
        const Expr& call_expr = *stmt.expr;
        Value callee = eval(*call_expr.args[0], scope);
        CallArgs args = eval_args(call_expr, 1, scope);
        args.keyword.emplace_back("caller", caller);
        append_value(out, call(callee, args));
        return Flow::kNormal;
      }
      case Stmt::Kind::kFilterBlock: {
        MarkedText body;
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        exec_body(stmt.body, inner, body);
        append_value(out, apply_filter_chain(stmt.filters, Value(std::move(body)), scope));
        return Flow::kNormal;
      }
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
      case Stmt::Kind::kWith: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        for (const auto& [name, value] : stmt.params) inner->vars[name] = eval(*value, scope);
        return exec_body(stmt.body, inner, out);
      }
      case Stmt::Kind::kScope: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        return exec_body(stmt.body, inner, out);
      }
    }
  } catch (RenderError& e) {
    if (!e.line) e.line = stmt.line;
    throw;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec_for(const Stmt& stmt, const ScopePtr& scope, MarkedText& out) {
  run_loop(stmt, scope, eval(*stmt.expr, scope), 1, out);
  return Flow::kNormal;
}

// One (possibly recursive) run of a for loop over `iterable`; break/continue end here.
void Evaluator::run_loop(const Stmt& stmt, const ScopePtr& scope, const Value& iterable, int64_t depth, MarkedText& out) {
  ValueList all = iterable.iterate();
  ValueList items;
  auto bind = [&](Scope& s, const Value& item) {
    if (stmt.targets.size() == 1) {
      s.vars[stmt.targets[0]] = item;
      return;
    }
    ValueList parts = item.iterate();
    if (parts.size() != stmt.targets.size()) {
      raise(std::string("ValueError: ") + (parts.size() < stmt.targets.size() ? "not enough" : "too many") +
            " values to unpack (expected " + std::to_string(stmt.targets.size()) + ")");
    }
    for (size_t i = 0; i < parts.size(); ++i) s.vars[stmt.targets[i]] = parts[i];
  };
  if (stmt.condition) {
    for (const auto& item : all) {
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      bind(*probe, item);
      if (eval(*stmt.condition, probe).truthy()) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  if (items.empty()) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    exec_body(stmt.else_body, inner, out);
    return;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  // loop.changed(*values) remembers the previous call's values for this run of the loop.
  auto last_changed = std::make_shared<std::optional<ValueList>>();
  Value changed = Value::callable("changed", [last_changed](Evaluator&, const CallArgs& args) {
    bool same = last_changed->has_value() && (*last_changed)->size() == args.positional.size();
    for (size_t k = 0; same && k < args.positional.size(); ++k) same = equals((**last_changed)[k], args.positional[k]);
    if (same) return Value(false);
    *last_changed = args.positional;
    return Value(true);
  });
  Value recurse;
  if (stmt.recursive) {
    recurse = Value::callable("loop", [this, &stmt, scope, depth](Evaluator&, const CallArgs& args) {
      if (args.positional.size() != 1) raise("TypeError: loop() takes exactly one argument");
      if (call_depth_ >= kMaxCallDepth) raise("RecursionError: maximum recursion depth exceeded");
      ++call_depth_;
      MarkedText nested;
      try {
        run_loop(stmt, scope, args.positional[0], depth + 1, nested);
      } catch (...) {
        --call_depth_;
        throw;
      }
      --call_depth_;
      return Value(std::move(nested));
    });
  }
  for (int64_t i = 0; i < n; ++i) {
    if (++loop_iterations_ > kMaxLoopIterations) raise("RuntimeError: more than 10 million loop iterations in one render");
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    bind(*inner, items[static_cast<size_t>(i)]);
    Dict loop;
    loop.items.reserve(12);
    loop.items.emplace_back("index", Value(i + 1));
    loop.items.emplace_back("index0", Value(i));
    loop.items.emplace_back("revindex", Value(n - i));
    loop.items.emplace_back("revindex0", Value(n - i - 1));
    loop.items.emplace_back("first", Value(i == 0));
    loop.items.emplace_back("last", Value(i == n - 1));
    loop.items.emplace_back("length", Value(n));
    loop.items.emplace_back("depth", Value(depth));
    loop.items.emplace_back("depth0", Value(depth - 1));
    if (i > 0) loop.items.emplace_back("previtem", items[static_cast<size_t>(i - 1)]);
    if (i + 1 < n) loop.items.emplace_back("nextitem", items[static_cast<size_t>(i + 1)]);
    loop.items.emplace_back("cycle", Value::callable("cycle", [i](Evaluator&, const CallArgs& args) {
      if (args.positional.empty()) raise("TypeError: no items for cycling given");
      return args.positional[static_cast<size_t>(i) % args.positional.size()];
    }));
    loop.items.emplace_back("changed", changed);
    if (stmt.recursive) loop.items.emplace_back(kCallKey, recurse);
    inner->vars["loop"] = Value::dict(std::move(loop));
    Flow f = exec_body(stmt.body, inner, out);
    if (f == Flow::kBreak) break;
  }
}

void Evaluator::exec_set(const Stmt& stmt, const ScopePtr& scope, MarkedText& out) {
  (void)out;
  Value value;
  if (stmt.kind == Stmt::Kind::kSetBlock) {
    MarkedText body;
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    exec_body(stmt.body, inner, body);
    value = apply_filter_chain(stmt.filters, Value(std::move(body)), scope);
  } else {
    value = eval(*stmt.expr, scope);
  }
  if (!stmt.text.empty()) {
    const Value* target = scope->lookup(stmt.targets[0]);
    if (!target || !target->is_namespace()) raise("TemplateRuntimeError: cannot assign attribute on non-namespace object");
    target->mutable_dict().set(stmt.text, std::move(value));
    return;
  }
  if (stmt.targets.size() == 1) {
    scope->vars[stmt.targets[0]] = std::move(value);
    return;
  }
  ValueList parts = value.iterate();
  if (parts.size() != stmt.targets.size()) raise("ValueError: wrong number of values to unpack");
  for (size_t i = 0; i < parts.size(); ++i) scope->vars[stmt.targets[i]] = parts[i];
}

Value Evaluator::make_macro(const Stmt& stmt, const ScopePtr& scope) {
  const Stmt* def = &stmt;
  std::weak_ptr<Scope> weak = scope;
  return Value::callable(stmt.text, [def, weak](Evaluator& ev, const CallArgs& args) {
    if (ev.call_depth_ >= kMaxCallDepth) raise("RecursionError: maximum recursion depth exceeded");
    struct DepthGuard {
      int& depth;
      ~DepthGuard() { --depth; }
    } guard{++ev.call_depth_};
    auto closure = weak.lock();
    auto inner = std::make_shared<Scope>();
    inner->parent = closure ? closure : ev.globals_;
    const auto& params = def->params;
    for (size_t i = 0; i < params.size(); ++i) {
      const Value* v = args.get(i, params[i].first);
      if (v) {
        inner->vars[params[i].first] = *v;
      } else if (params[i].second) {
        inner->vars[params[i].first] = ev.eval(*params[i].second, inner);
      } else {
        inner->vars[params[i].first] = Value::undefined("UndefinedError: parameter '" + params[i].first + "' was not provided");
      }
    }
    ValueList varargs;
    for (size_t i = params.size(); i < args.positional.size(); ++i) varargs.push_back(args.positional[i]);
    inner->vars["varargs"] = Value::tuple(std::move(varargs));
    Dict kwargs;
    for (const auto& [k, v] : args.keyword) {
      bool is_param = false;
      for (const auto& p : params) is_param = is_param || p.first == k;
      if (k == "caller") inner->vars["caller"] = v;
      else if (!is_param) kwargs.set(k, v);
    }
    inner->vars["kwargs"] = Value::dict(std::move(kwargs));
    MarkedText out;
    ev.exec_body(def->body, inner, out);
    return Value(std::move(out));
  });
}

Value Evaluator::apply_filter_chain(const std::vector<ExprPtr>& filters, Value value, const ScopePtr& scope) {
  for (const auto& f : filters) {
    CallArgs args = eval_args(*f, 1, scope);
    value = apply_filter(*this, f->name, value, args);
  }
  return value;
}

CallArgs Evaluator::eval_args(const Expr& expr, size_t first, const ScopePtr& scope) {
  CallArgs args;
  for (size_t i = first; i < expr.args.size(); ++i) args.positional.push_back(eval(*expr.args[i], scope));
  for (const auto& [k, v] : expr.kwargs) args.keyword.emplace_back(k, eval(*v, scope));
  return args;
}

Value Evaluator::eval(const Expr& expr, const ScopePtr& scope) {
  try {
    return eval_inner(expr, scope);
  } catch (RenderError& e) {
    if (!e.line) e.line = expr.line;
    throw;
  }
}

Value Evaluator::eval_inner(const Expr& expr, const ScopePtr& scope) {
  switch (expr.kind) {
    case Expr::Kind::kLiteral: return expr.literal;
    case Expr::Kind::kName: {
      const Value* v = scope->lookup(expr.name);
      return v ? *v : Value::undefined(undefined_hint("'" + expr.name + "' is undefined"));
    }
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      ValueList items;
      for (const auto& a : expr.args) items.push_back(eval(*a, scope));
      return expr.kind == Expr::Kind::kTuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    case Expr::Kind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
        Value k = eval(*expr.args[i], scope);
        d.set(std::move(k), eval(*expr.args[i + 1], scope));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kGetAttr: return get_attr(eval(*expr.args[0], scope), expr.name);
    case Expr::Kind::kGetItem: return get_item(eval(*expr.args[0], scope), eval(*expr.args[1], scope));
    case Expr::Kind::kSlice: {
      Value obj = eval(*expr.args[0], scope);
      Value parts[3];
      for (int i = 0; i < 3; ++i) {
        if (expr.args[1 + i]) parts[i] = eval(*expr.args[1 + i], scope);
      }
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::kCall: {
      Value callee = eval(*expr.args[0], scope);
      CallArgs args = eval_args(expr, 1, scope);
      return call(callee, args);
    }
    case Expr::Kind::kFilter: {
      Value subject = eval(*expr.args[0], scope);
      CallArgs args = eval_args(expr, 1, scope);
      return apply_filter(*this, expr.name, subject, args);
    }
    case Expr::Kind::kTest: {
      Value subject = eval(*expr.args[0], scope);
      CallArgs args = eval_args(expr, 1, scope);
      bool r = apply_test(*this, expr.name, subject, args);
      return Value(expr.negated ? !r : r);
    }
    case Expr::Kind::kUnary: {
      Value v = eval(*expr.args[0], scope);
      if (expr.name == "not") return Value(!v.truthy());
      if (v.is_undefined()) raise_undefined(v);
      if (!v.is_number()) raise("TypeError: bad operand type for unary " + expr.name + ": '" + v.type_name() + "'");
      if (expr.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
      if (v.is_float()) return Value(-v.as_double());
      if (v.as_int() == INT64_MIN) raise("OverflowError: integer result does not fit in 64 bits");
      return Value(-v.as_int());
    }
    case Expr::Kind::kBinary: return eval_binary(expr, scope);
    case Expr::Kind::kCompare: {
      // a < b < c == (a < b) and (b < c), each operand evaluated once.
      Value left = eval(*expr.args[0], scope);
      for (const auto& [op, operand] : expr.kwargs) {
        Value right = eval(*operand, scope);
        if (!binary_op(op, left, right).truthy()) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::kCondition: {
      if (eval(*expr.args[0], scope).truthy()) return eval(*expr.args[1], scope);
      if (expr.args[2]) return eval(*expr.args[2], scope);
      return Value::undefined(undefined_hint("the inline if-expression on line " + std::to_string(expr.line) +
                                             " evaluated to false and no else section was defined."));
    }
  }
  return Value();
}

Value Evaluator::eval_binary(const Expr& expr, const ScopePtr& scope) {
  Value a = eval(*expr.args[0], scope);
  if (expr.name == "and") return a.truthy() ? eval(*expr.args[1], scope) : a;
  if (expr.name == "or") return a.truthy() ? a : eval(*expr.args[1], scope);
  return binary_op(expr.name, a, eval(*expr.args[1], scope));
}

}  // namespace lemma::jinja
