// Python semantics of Jinja's operators, attribute/item access and slicing over Values.
#include <algorithm>
#include <climits>
#include <cmath>

#include "lemma/tokenizer/jinja/evaluator.h"
#include "lemma/tokenizer/jinja/marks.h"

namespace lemma::jinja {

void raise_undefined(const Value& undefined) {
  raise(undefined.str().empty() ? "UndefinedError: value is undefined" : undefined.str());
}

namespace {

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

// str % args: the result is derived from every operand (marked whole when any holds a mark).
Value percent_value(const Value& format, const Value& args) {
  std::string s = percent_format(format.str(), args, format.is_safe());
  Value out = contains_marks(format) || contains_marks(args) ? Value(MarkedText(std::move(s), true)) : Value(std::move(s));
  return format.is_safe() ? out.as_markup() : out;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "%" && a.is_string()) {  // str % x: str's own formatting (an undefined x is a "mapping")
    return percent_value(a, b);
  }
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      // Markup + str escapes the plain operand (markupsafe), and the result stays Markup.
      MarkedText out;
      if (a.is_safe() || b.is_safe()) {
        append_value(out, a.is_safe() ? a : map_runs(a, html_escape));
        append_value(out, b.is_safe() ? b : map_runs(b, html_escape));
        return Value(std::move(out)).as_markup();
      }
      append_value(out, a);
      append_value(out, b);
      return Value(std::move(out));
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      ValueList items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    if (a.is_list()) {
      const char* self = a.is_tuple() ? "tuple" : "list";
      const std::string other = b.is_tuple() ? "tuple" : b.type_name();
      raise(std::string("TypeError: can only concatenate ") + self + " (not \"" + other + "\") to " + self);
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
        MarkedText out;
        for (int64_t i = 0; i < n; ++i) append_value(out, *seq);
        return Value(std::move(out));
      }
      ValueList items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->items().begin(), seq->items().end());
      return seq->is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
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
    if (y == 0) raise(op == "%" ? "ZeroDivisionError: float modulo" : "ZeroDivisionError: float floor division by zero");
    // CPython's float divmod, signed zeros included.
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0) {
      if ((y < 0) != (mod < 0)) {
        mod += y;
        div -= 1.0;
      }
    } else {
      mod = std::copysign(0.0, y);
    }
    double floordiv;
    if (div != 0) {
      floordiv = std::floor(div);
      if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
      floordiv = std::copysign(0.0, x / y);
    }
    return Value(op == "//" ? floordiv : mod);
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
      if ((item.is_list() && !item.is_tuple()) || item.is_dict()) {
        raise("TypeError: unhashable type: '" + item.type_name() + "'");
      }
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
    MarkedText s;
    append_value(s, a);
    append_value(s, b);
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
      if (obj.is_tuple() && obj.items().size() == 2 && (name == "grouper" || name == "list")) {  // groupby's pairs
        return obj.items()[name == "grouper" ? 0 : 1];
      }
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
        if (obj.has_marks()) return code_point_slice(obj, CodePoints(obj.str()), static_cast<size_t>(i), static_cast<size_t>(i) + 1);
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
  // Jinja compiles slices to plain Python subscripts (no getitem fallback to undefined).
  if (obj.is_dict()) raise("TypeError: unhashable type: 'slice'");
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
  if (obj.is_string() && obj.has_marks()) {
    const CodePoints cp(obj.str());
    MarkedText out;
    for (size_t i : picks) append_value(out, code_point_slice(obj, cp, i, i + 1));
    return Value(std::move(out));
  }
  if (obj.is_string()) {
    std::u32string out;
    for (size_t i : picks) out += chars[i];
    return Value(utf8_encode(out));
  }
  ValueList out;
  for (size_t i : picks) out.push_back(obj.items()[i]);
  return obj.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace lemma::jinja
