#include "lemma/tokenizer/jinja/evaluator.h"

#include <climits>
#include <cmath>

namespace lemma::jinja {

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

void raise_undefined(const Value& undefined) {
  raise(undefined.str().empty() ? "UndefinedError: value is undefined" : undefined.str());
}

namespace {

constexpr const char* kCallKey = "__call__";  // makes a dict (a recursive `loop`) callable
constexpr int64_t kMaxSequenceBytes = int64_t{64} << 20;  // cap on 'x' * n and [..] * n

std::string undefined_hint(const std::string& what) { return "UndefinedError: " + what; }

std::string object_name(const Value& v) {
  if (v.is_none()) return "'None'";
  std::string out = "'";
  out += v.type_name();
  out += " object'";
  return out;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  raise("TypeError: unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      // Markup + str escapes the plain operand (markupsafe), and the result stays Markup.
      if (a.is_safe() || b.is_safe()) {
        return Value::markup((a.is_safe() ? a.str() : html_escape(a.str())) + (b.is_safe() ? b.str() : html_escape(b.str())));
      }
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list()) {
      ValueList items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(items));
    }
    if (a.is_string()) raise("TypeError: can only concatenate str (not \"" + b.type_name() + "\") to str");
    if (a.is_list()) raise("TypeError: can only concatenate list (not \"" + b.type_name() + "\") to list");
  }
  if (op == "*") {
    const Value* seq = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq && (count->is_int() || count->is_bool())) {
      int64_t n = std::max<int64_t>(0, count->as_int());
      const int64_t unit = seq->is_string() ? static_cast<int64_t>(seq->str().size()) : static_cast<int64_t>(seq->items().size());
      if (unit > 0 && n > kMaxSequenceBytes / unit) raise("MemoryError: repeated sequence too large");
      if (seq->is_string()) {
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += seq->str();
        return Value(out);
      }
      ValueList items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->items().begin(), seq->items().end());
      return Value::list(std::move(items));
    }
  }
  if (op == "%" && a.is_string()) {
    std::string s = percent_format(a.str(), b, a.is_safe());
    return a.is_safe() ? Value::markup(std::move(s)) : Value(std::move(s));
  }
  if (!a.is_number() || !b.is_number()) unsupported(op, a, b);
  bool ints = !a.is_float() && !b.is_float();
  if (op == "/") {
    if (b.as_double() == 0) raise("ZeroDivisionError: division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (ints) {
    // Python ints are unbounded; lemma's are 64-bit and overflow is an error.
    int64_t x = a.as_int(), y = b.as_int(), r = 0;
    auto checked = [&](bool overflow) {
      if (overflow) raise("OverflowError: integer result does not fit in 64 bits");
      return Value(r);
    };
    if (op == "+") return checked(__builtin_add_overflow(x, y, &r));
    if (op == "-") return checked(__builtin_sub_overflow(x, y, &r));
    if (op == "*") return checked(__builtin_mul_overflow(x, y, &r));
    if (op == "//" || op == "%") {
      if (y == 0) raise(op == "%" ? "ZeroDivisionError: integer modulo by zero" : "ZeroDivisionError: integer division or modulo by zero");
      if (y == -1) return op == "%" ? Value(static_cast<int64_t>(0)) : checked(__builtin_sub_overflow(int64_t{0}, x, &r));
      return Value(op == "//" ? floor_div(x, y) : py_mod(x, y));
    }
    if (op == "**") {
      if (y >= 0) {
        if (x == 0) return Value(static_cast<int64_t>(y == 0 ? 1 : 0));
        if (x == 1) return Value(static_cast<int64_t>(1));
        if (x == -1) return Value(static_cast<int64_t>(y % 2 ? -1 : 1));
        r = 1;  // |x| >= 2: at most 63 steps before overflow
        for (int64_t i = 0; i < y; ++i) {
          if (__builtin_mul_overflow(r, x, &r)) raise("OverflowError: integer result does not fit in 64 bits");
        }
        return Value(r);
      }
      return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
    }
  }
  double x = a.as_double(), y = b.as_double();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "//" || op == "%") {
    if (y == 0) raise("ZeroDivisionError: float modulo");
    double q = std::floor(x / y);
    return Value(op == "//" ? q : x - q * y);
  }
  if (op == "**") return Value(std::pow(x, y));
  unsupported(op, a, b);
}

}  // namespace

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kString:
      if (!item.is_string()) raise("TypeError: 'in <string>' requires string as left operand, not " + item.type_name());
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
    case Value::Kind::kGenerator:
      for (const auto& v : container.items()) {
        if (equals(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
    case Value::Kind::kNamespace:
      return container.dict_items().find(item) != nullptr;
    case Value::Kind::kUndefined: return false;
    default: raise("TypeError: argument of type '" + container.type_name() + "' is not iterable");
  }
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Value(equals(a, b));
  if (op == "!=") return Value(!equals(a, b));
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    bool r;
    if (op == "<") r = less_than(a, b);
    else if (op == ">") r = less_than(b, a);
    else if (op == "<=") r = !less_than(b, a);
    else r = !less_than(a, b);
    return Value(r);
  }
  if (op == "in") return Value(contains(b, a));
  if (op == "not in") return Value(!contains(b, a));
  if (op == "~") {
    std::string s;
    s.reserve((a.is_string() ? a.str().size() : 16) + (b.is_string() ? b.str().size() : 16));
    a.append_to(s);
    b.append_to(s);
    return Value(std::move(s));
  }
  return arithmetic(op, a, b);
}

Value get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined: raise_undefined(obj);
    case Value::Kind::kNamespace: {
      const Value* v = obj.dict_items().get(name);
      return v ? *v : Value::undefined(undefined_hint("'Namespace object' has no attribute '" + name + "'"));
    }
    case Value::Kind::kDict: {
      if (auto m = bound_method(obj, name)) return *m;
      const Value* v = obj.dict_items().get(name);
      return v ? *v : Value::undefined(undefined_hint("'dict object' has no attribute '" + name + "'"));
    }
    default:
      if (auto m = bound_method(obj, name)) return *m;
      return Value::undefined(undefined_hint(object_name(obj) + " has no attribute '" + name + "'"));
  }
}

Value get_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined: raise_undefined(obj);
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: {
      const Value* v = obj.dict_items().find(key);
      if (v) return *v;
      if (key.is_string()) return get_attr(obj, key.str());
      return Value::undefined(undefined_hint("'dict object' has no attribute " + key.repr()));
    }
    case Value::Kind::kList:
    case Value::Kind::kString: {
      if (key.is_int() || key.is_bool()) {
        int64_t n = obj.length();
        int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i < 0 || i >= n) {
          return Value::undefined(undefined_hint(object_name(obj) + " has no element " + key.repr()));
        }
        if (obj.is_list()) return obj.items()[static_cast<size_t>(i)];
        return Value(utf8_encode(std::u32string(1, utf8_decode(obj.str())[static_cast<size_t>(i)])));
      }
      if (key.is_string()) return get_attr(obj, key.str());
      return Value::undefined(undefined_hint(object_name(obj) + " has no element " + key.repr()));
    }
    default:
      if (key.is_string()) return get_attr(obj, key.str());
      return Value::undefined(undefined_hint(object_name(obj) + " has no element " + key.repr()));
  }
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (obj.is_undefined()) raise_undefined(obj);
  if (!obj.is_string() && !obj.is_list()) raise("TypeError: '" + obj.type_name() + "' object is not subscriptable");
  auto index_or = [](const Value& v, bool& present) -> int64_t {
    present = !(v.is_undefined() || v.is_none());
    if (present && !v.is_int() && !v.is_bool()) raise("TypeError: slice indices must be integers or None");
    return present ? v.as_int() : 0;
  };
  bool has_start, has_stop, has_step;
  int64_t start = index_or(start_v, has_start), stop = index_or(stop_v, has_stop), step = index_or(step_v, has_step);
  if (!has_step) step = 1;
  if (step == 0) raise("ValueError: slice step cannot be zero");
  std::u32string chars;
  int64_t n;
  if (obj.is_string()) {
    chars = utf8_decode(obj.str());
    n = static_cast<int64_t>(chars.size());
  } else {
    n = static_cast<int64_t>(obj.items().size());
  }
  auto clamp = [&](int64_t i, bool present, int64_t def) {
    if (!present) return def;
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  int64_t lo = clamp(start, has_start, step > 0 ? 0 : n - 1);
  int64_t hi = clamp(stop, has_stop, step > 0 ? n : -1);
  std::vector<size_t> picks;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi;) {
    picks.push_back(static_cast<size_t>(i));
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  if (obj.is_string()) {
    std::u32string out;
    for (size_t i : picks) out += chars[i];
    return Value(utf8_encode(out));
  }
  ValueList out;
  for (size_t i : picks) out.push_back(obj.items()[i]);
  return Value::list(std::move(out));
}

// ---------------------------------------------------------------- evaluation --

std::string Evaluator::render(Dict variables) {
  globals_ = std::make_shared<Scope>();
  Dict builtins;
  add_globals(builtins);
  for (auto& [k, v] : builtins.items) globals_->vars[k.str()] = std::move(v);
  for (auto& [k, v] : variables.items) globals_->vars[k.str()] = std::move(v);
  auto top = std::make_shared<Scope>();
  top->parent = globals_;
  std::string out;
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

Evaluator::Flow Evaluator::exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& stmt : body) {
    Flow f = exec(*stmt, scope, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec(const Stmt& stmt, const ScopePtr& scope, std::string& out) {
  try {
    switch (stmt.kind) {
      case Stmt::Kind::kText:
      case Stmt::Kind::kOutput:
        if (stmt.kind == Stmt::Kind::kText) out += stmt.text;
        else eval(*stmt.expr, scope).append_to(out);
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
          std::string body;
          exec_body(stmt.body, inner, body);
          return Value(body);
        });
        const Expr& call_expr = *stmt.expr;
        Value callee = eval(*call_expr.args[0], scope);
        CallArgs args = eval_args(call_expr, 1, scope);
        args.keyword.emplace_back("caller", caller);
        out += call(callee, args).to_str();
        return Flow::kNormal;
      }
      case Stmt::Kind::kFilterBlock: {
        std::string body;
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        exec_body(stmt.body, inner, body);
        out += apply_filter_chain(stmt.filters, Value(body), scope).to_str();
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

Evaluator::Flow Evaluator::exec_for(const Stmt& stmt, const ScopePtr& scope, std::string& out) {
  run_loop(stmt, scope, eval(*stmt.expr, scope), 1, out);
  return Flow::kNormal;
}

// One (possibly recursive) run of a for loop over `iterable`; break/continue end here.
void Evaluator::run_loop(const Stmt& stmt, const ScopePtr& scope, const Value& iterable, int64_t depth, std::string& out) {
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
      std::string nested;
      try {
        run_loop(stmt, scope, args.positional[0], depth + 1, nested);
      } catch (...) {
        --call_depth_;
        throw;
      }
      --call_depth_;
      return Value(nested);
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

void Evaluator::exec_set(const Stmt& stmt, const ScopePtr& scope, std::string& out) {
  (void)out;
  Value value;
  if (stmt.kind == Stmt::Kind::kSetBlock) {
    std::string body;
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    exec_body(stmt.body, inner, body);
    value = apply_filter_chain(stmt.filters, Value(body), scope);
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
    std::string out;
    ev.exec_body(def->body, inner, out);
    return Value(out);
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
