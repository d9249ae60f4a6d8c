#include "lemma/tokenizer/jinja/value.h"

#include <algorithm>

#include "lemma/tokenizer/jinja/marks.h"

namespace lemma::jinja {

void raise(std::string message) { throw RenderError{std::move(message)}; }

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return get(key.str());
  for (const auto& [k, v] : items) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::get(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

const Value* CallArgs::get(size_t index, const std::string& name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::undefined(std::string hint) {
  Value v;
  if (!hint.empty()) v.s_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value::Value(bool b) : kind_(Kind::kBool), b_(b) {}
Value::Value(int64_t v) : kind_(Kind::kInt), i_(v) {}
Value::Value(double v) : kind_(Kind::kFloat), f_(v) {}
Value::Value(std::string s) : kind_(Kind::kString), s_(std::make_shared<const std::string>(std::move(s))) {}
Value::Value(MarkedText s) : kind_(Kind::kString) {
  if (s.has_marks()) marks_ = std::make_shared<const std::vector<ByteRange>>(s.marks());
  s_ = std::make_shared<const std::string>(std::move(s).take_text());
}

MarkedText Value::marked_text() const {
  MarkedText out;
  out.append(str(), marks());
  return out;
}

Value Value::as_markup() const {
  Value v = *this;
  v.safe_ = true;
  return v;
}

const std::string& Value::empty_string() {
  static const std::string empty;
  return empty;
}
Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.safe_ = true;
  return v;
}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}
Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}
Value Value::generator(ValueList items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kGenerator;
  return v;
}
Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}
Value Value::namespace_object(Dict d) {
  Value v = dict(std::move(d));
  v.kind_ = Kind::kNamespace;
  return v;
}
Value Value::callable(std::string name, std::function<Value(Evaluator&, const CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j, bool from_request) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(MarkedText(j.get<std::string>(), from_request));
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& e : j) items.push_back(from_json(e, from_request));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) {
        d.items.emplace_back(Value(MarkedText(it.key(), from_request)), from_json(it.value(), from_request));
      }
      return dict(std::move(d));
    }
    default: return none();
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0.0;
    case Kind::kString: return !str().empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return !dict_->items.empty();
    default: return true;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return tuple_ ? "tuple" : "list";
    case Kind::kGenerator: return "generator";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "object";
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return str();
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return b_ ? "True" : "False";
    case Kind::kInt: return std::to_string(i_);
    case Kind::kFloat: return float_repr(f_);
    case Kind::kString: return safe_ ? "Markup(" + string_repr(str()) + ")" : string_repr(str());
    case Kind::kList: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr();
      }
      if (tuple_ && list_->size() == 1) out += ",";
      return out + (tuple_ ? ")" : "]");
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      std::string out = kind_ == Kind::kNamespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + (kind_ == Kind::kNamespace ? "}>" : "}");
    }
    case Kind::kGenerator: return "<generator object at 0x0>";
    case Kind::kCallable: return "<function " + fn_->name + ">";
  }
  return "";
}

ValueList Value::iterate() const {
  switch (kind_) {
    case Kind::kUndefined: return {};
    case Kind::kList:
    case Kind::kGenerator: return *list_;
    case Kind::kDict: {
      ValueList keys;
      for (const auto& [k, v] : dict_->items) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      ValueList chars;
      if (!has_marks()) {
        for (char32_t c : utf8_decode(str())) chars.emplace_back(utf8_encode(std::u32string(1, c)));
        return chars;
      }
      const CodePoints cp(str());
      chars.reserve(cp.cps.size());
      for (size_t i = 0; i < cp.cps.size(); ++i) chars.push_back(code_point_slice(*this, cp, i, i + 1));
      return chars;
    }
    default: raise("TypeError: '" + type_name() + "' object is not iterable");
  }
}

int64_t Value::length() const {
  switch (kind_) {
    case Kind::kUndefined: return 0;
    case Kind::kString: return static_cast<int64_t>(utf8_length(str()));
    case Kind::kList: return static_cast<int64_t>(list_->size());
    case Kind::kDict: return static_cast<int64_t>(dict_->items.size());
    default: raise("TypeError: object of type '" + type_name() + "' has no len()");
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.str() == b.str();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple()) return false;
      const auto &x = a.items(), &y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: {
      const auto &x = a.dict_items(), &y = b.dict_items();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* w = y.find(k);
        if (!w || !equals(v, *w)) return false;
      }
      return true;
    }
    case Value::Kind::kGenerator: return &a.items() == &b.items();
    case Value::Kind::kCallable: return &a.fn() == &b.fn();
    default: return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less_than(x[i], y[i])) return true;
      if (less_than(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  raise("TypeError: '<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace lemma::jinja
