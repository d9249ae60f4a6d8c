// The Jinja value model: Python-like dynamic values (undefined, None, bool, int, float, str,
// list, dict with insertion order, generator, namespace, callable) with Python semantics for
// truthiness, equality, str() and repr(). Lists and dicts have reference semantics like Python's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemma/tokenizer/marked_text.h"

namespace lemma::jinja {

// A render-time failure without location; the evaluator adds "<name>:<line>: ".
struct RenderError {
  std::string message;  // e.g. "TypeError: 'NoneType' object is not iterable"
  int line = 0;         // innermost template line, filled in while unwinding
};
[[noreturn]] void raise(std::string message);

class Value;
using ValueList = std::vector<Value>;

// A Python dict: keys are values (usually strings; templates also use int keys), insertion order kept.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* get(std::string_view key) const;  // string key
  void set(Value key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // Positional i or keyword `name`, else nullptr.
  const Value* get(size_t index, const std::string& name) const;
};

class Evaluator;
struct Callable {
  std::string name;
  std::function<Value(Evaluator&, const CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kGenerator, kDict, kNamespace, kCallable };

  Value() = default;  // undefined
  static Value undefined(std::string hint = {});
  static Value none();
  Value(bool b);
  Value(int v) : Value(static_cast<int64_t>(v)) {}
  Value(int64_t v);
  Value(double v);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  // A string whose marked bytes came from the request (chat_template.h); see marks.h.
  explicit Value(MarkedText s);
  static Value list(ValueList items = {});
  static Value tuple(ValueList items);  // a list that prints as (a, b) and differs from lists in ==
  bool is_tuple() const { return tuple_; }
  static Value generator(ValueList items);
  static Value dict(Dict d = {});
  static Value namespace_object(Dict d = {});
  static Value callable(std::string name, std::function<Value(Evaluator&, const CallArgs&)> fn);
  // JSON -> values; with `from_request` every string (keys included) is wholly marked.
  static Value from_json(const nlohmann::ordered_json& j, bool from_request = false);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_generator() const { return kind_ == Kind::kGenerator; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }
  bool is_listlike() const { return kind_ == Kind::kList || kind_ == Kind::kGenerator; }
  bool is_safe() const { return safe_; }  // a Markup string (|safe, |escape)
  static Value markup(std::string s);
  Value as_markup() const;  // the same string (marks kept) as Markup

  // The bytes of a string that came from the request (sorted, disjoint; empty: none).
  std::span<const ByteRange> marks() const {
    return marks_ ? std::span<const ByteRange>(*marks_) : std::span<const ByteRange>();
  }
  bool has_marks() const { return marks_ != nullptr; }
  // str() with its marks.
  MarkedText marked_text() const;

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  // String contents, or the undefined hint. Strings are immutable and shared between copies.
  const std::string& str() const { return s_ ? *s_ : empty_string(); }
  const ValueList& items() const { return *list_; }
  ValueList& mutable_items() const { return *list_; }
  const Dict& dict_items() const { return *dict_; }
  Dict& mutable_dict() const { return *dict_; }
  const Callable& fn() const { return *fn_; }

  bool truthy() const;
  // Python type name for messages: 'NoneType', 'str', 'dict', 'list', 'generator', ...
  std::string type_name() const;
  // Python str() (what {{ x }} prints; undefined prints "").
  std::string to_str() const;
  // Python repr().
  std::string repr() const;
  // Items when iterating (list items, dict keys, string characters); raises for non-iterables.
  ValueList iterate() const;
  // Python len(); raises TypeError for values without one.
  int64_t length() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  bool safe_ = false;
  bool tuple_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const std::vector<ByteRange>> marks_;  // null: no byte came from the request
  static const std::string& empty_string();
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> fn_;
};

bool equals(const Value& a, const Value& b);
// Python ordering for < (numbers, strings, lists); raises TypeError otherwise.
bool less_than(const Value& a, const Value& b);
// markupsafe.escape: & < > " ' -> entities.
std::string html_escape(const std::string& s);

// Python-compatible formatting helpers (pyformat.cpp).
std::string float_repr(double v);         // repr(float): 1.0, 0.1, 1e+16, inf, nan
std::string string_repr(const std::string& s);  // repr(str) with Python's quote choice
// format(v, spec) with Python's format-spec mini-language ([[fill]align][sign][#][0][width][,][.prec][type]).
std::string format_with_spec(const Value& v, const std::string& spec);
// json.dumps(v, ensure_ascii=False, indent, separators, sort_keys); raises TypeError on
// values JSON cannot hold (undefined, generators, callables).
struct JsonStyle {
  int indent = -1;  // -1 = None (single line)
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style);
// UTF-8 <-> code points for Python str indexing and length.
std::u32string utf8_decode(const std::string& s);
std::string utf8_encode(const std::u32string& s);
size_t utf8_length(const std::string& s);

}  // namespace lemma::jinja
