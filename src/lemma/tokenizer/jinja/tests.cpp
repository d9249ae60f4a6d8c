// Jinja2's builtin tests (`x is defined`, `x is divisibleby 3`, ...).
#include <unordered_map>

#include "lemma/tokenizer/jinja/builtins.h"

namespace lemma::jinja {
namespace {

using Test = bool (*)(const Value&, const CallArgs&);

const Value& arg0(const CallArgs& args) {
  static const Value missing;
  const Value* v = args.get(0, "other");
  if (!v) v = args.get(0, "value");
  return v ? *v : missing;
}

bool t_defined(const Value& v, const CallArgs&) { return !v.is_undefined(); }
bool t_undefined(const Value& v, const CallArgs&) { return v.is_undefined(); }
bool t_none(const Value& v, const CallArgs&) { return v.is_none(); }
bool t_boolean(const Value& v, const CallArgs&) { return v.is_bool(); }
bool t_true(const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_false(const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_integer(const Value& v, const CallArgs&) { return v.is_int(); }
bool t_float(const Value& v, const CallArgs&) { return v.is_float(); }
bool t_number(const Value& v, const CallArgs&) { return v.is_number(); }
bool t_string(const Value& v, const CallArgs&) { return v.is_string(); }
bool t_mapping(const Value& v, const CallArgs&) { return v.is_dict(); }
bool t_iterable(const Value& v, const CallArgs&) {
  return v.is_string() || v.is_listlike() || v.is_dict() || v.is_undefined();
}
// Jinja: has len() and __getitem__ (Undefined has both).
bool t_sequence(const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }
bool t_callable(const Value& v, const CallArgs&) { return v.is_callable() || v.is_undefined(); }  // Undefined has __call__
// Jinja: str(value).islower() / .isupper(): at least one cased character, none of the other case.
bool cased_as(const Value& v, bool lower) {
  const std::string s = v.to_str();
  bool any_cased = false;
  for (char32_t c : utf8_decode(s)) {
    const bool is_lower = cp_upper(c) != c || c == 0xdf, is_upper = cp_lower(c) != c;
    if (lower ? is_upper : is_lower) return false;
    any_cased = any_cased || is_lower || is_upper;
  }
  return any_cased;
}
bool t_lower(const Value& v, const CallArgs&) { return cased_as(v, true); }
bool t_upper(const Value& v, const CallArgs&) { return cased_as(v, false); }
bool t_escaped(const Value&, const CallArgs&) { return false; }

// Jinja: value % 2 == 1, value % 2 == 0, value % num == 0 (Python %, floats included).
bool t_odd(const Value& v, const CallArgs&) { return equals(binary_op("%", v, Value(static_cast<int64_t>(2))), Value(static_cast<int64_t>(1))); }
bool t_even(const Value& v, const CallArgs&) { return equals(binary_op("%", v, Value(static_cast<int64_t>(2))), Value(static_cast<int64_t>(0))); }
bool t_divisibleby(const Value& v, const CallArgs& args) {
  const Value* n = args.get(0, "num");
  if (!n) raise("TypeError: test_divisibleby() missing 1 required positional argument: 'num'");
  return equals(binary_op("%", v, *n), Value(static_cast<int64_t>(0)));
}

bool t_eq(const Value& v, const CallArgs& args) { return equals(v, arg0(args)); }
bool t_ne(const Value& v, const CallArgs& args) { return !equals(v, arg0(args)); }
bool t_lt(const Value& v, const CallArgs& args) { return binary_op("<", v, arg0(args)).truthy(); }
bool t_le(const Value& v, const CallArgs& args) { return binary_op("<=", v, arg0(args)).truthy(); }
bool t_gt(const Value& v, const CallArgs& args) { return binary_op(">", v, arg0(args)).truthy(); }
bool t_ge(const Value& v, const CallArgs& args) { return binary_op(">=", v, arg0(args)).truthy(); }
bool t_in(const Value& v, const CallArgs& args) { return contains(args.positional.empty() ? Value() : args.positional[0], v); }
bool t_sameas(const Value& v, const CallArgs& args) {
  const Value& o = arg0(args);
  if (v.kind() != o.kind()) return false;
  if (v.is_list() || v.is_generator()) return &v.items() == &o.items();
  if (v.is_dict() || v.is_namespace()) return &v.dict_items() == &o.dict_items();
  return equals(v, o);
}
bool t_filter(const Value& v, const CallArgs&) { return v.is_string() && has_filter(v.str()); }

const std::unordered_map<std::string, Test>& registry() {
  static const std::unordered_map<std::string, Test> tests = {
      {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none}, {"boolean", t_boolean},
      {"true", t_true}, {"false", t_false}, {"integer", t_integer}, {"float", t_float}, {"number", t_number},
      {"string", t_string}, {"mapping", t_mapping}, {"iterable", t_iterable}, {"sequence", t_sequence},
      {"callable", t_callable}, {"lower", t_lower}, {"upper", t_upper}, {"escaped", t_escaped},
      {"odd", t_odd}, {"even", t_even}, {"divisibleby", t_divisibleby}, {"eq", t_eq}, {"equalto", t_eq},
      {"==", t_eq}, {"ne", t_ne}, {"!=", t_ne}, {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"le", t_le},
      {"<=", t_le}, {"gt", t_gt}, {"greaterthan", t_gt}, {">", t_gt}, {"ge", t_ge}, {">=", t_ge},
      {"in", t_in}, {"sameas", t_sameas}, {"filter", t_filter},
  };
  return tests;
}

}  // namespace

bool has_test(const std::string& name) { return name == "test" || registry().count(name) != 0; }

bool apply_test(Evaluator&, const std::string& name, const Value& subject, const CallArgs& args) {
  if (name == "test") return subject.is_string() && registry().count(subject.str()) != 0;
  auto it = registry().find(name);
  if (it == registry().end()) raise("TemplateAssertionError: No test named '" + name + "'.");
  return it->second(subject, args);
}

}  // namespace lemma::jinja
