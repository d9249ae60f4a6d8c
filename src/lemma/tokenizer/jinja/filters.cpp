// Jinja2's builtin filters (plus transformers' tojson), with Jinja2 3.1 semantics.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "lemma/tokenizer/jinja/builtins.h"

namespace lemma::jinja {
namespace {

using Filter = Value (*)(Evaluator&, const Value&, const CallArgs&);

// Key used for ordering in sort/dictsort/unique/min/max (lower-cased strings unless case_sensitive).
Value sort_key(const Value& v, bool case_sensitive) {
  if (v.is_string() && !case_sensitive) return Value(py_lower(v.str()));
  return v;
}

Value f_default(Evaluator&, const Value& v, const CallArgs& args) {
  Value fallback = arg_or(args, 0, "default_value", Value(""));
  bool boolean = arg_or(args, 1, "boolean", Value(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return fallback;
  return v;
}

Value f_length(Evaluator&, const Value& v, const CallArgs&) { return Value(v.length()); }

Value f_string(Evaluator&, const Value& v, const CallArgs&) { return to_text(v); }

Value f_trim(Evaluator&, const Value& v, const CallArgs& args) {
  Value s = py_strip(to_text(v), arg_or(args, 0, "chars", Value::none()), true, true);
  return v.is_safe() ? s.as_markup() : s;
}

// A Markup input gives a Markup result (str methods on markupsafe.Markup keep the type).
Value like(const Value& input, std::string s) { return input.is_safe() ? Value::markup(std::move(s)) : Value(std::move(s)); }

// Case mapping is per code point, so it keeps marks run by run.
Value f_upper(Evaluator&, const Value& v, const CallArgs&) {
  Value s = map_runs(to_text(v), py_upper);
  return v.is_safe() ? s.as_markup() : s;
}
Value f_lower(Evaluator&, const Value& v, const CallArgs&) {
  Value s = map_runs(to_text(v), py_lower);
  return v.is_safe() ? s.as_markup() : s;
}
Value f_capitalize(Evaluator&, const Value& v, const CallArgs&) { return like(v, py_capitalize(v.to_str())); }

Value f_title(Evaluator&, const Value& v, const CallArgs&) {
  // Jinja splits at runs of [-\s({\[<] and capitalizes each word.
  std::u32string out;
  bool word_start = true;
  for (char32_t c : utf8_decode(v.to_str())) {
    bool sep = c == '-' || is_py_space(c) || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out += c;
      word_start = true;
    } else {
      out += word_start ? cp_upper(c) : cp_lower(c);
      word_start = false;
    }
  }
  return like(v, utf8_encode(out));
}

Value f_replace(Evaluator&, const Value& v, const CallArgs& args) {
  std::string old = arg_or(args, 0, "old", Value("")).to_str();
  Value repl = to_text(arg_or(args, 1, "new", Value("")));
  Value count = arg_or(args, 2, "count", Value::none());
  return py_replace(to_text(v), old, repl, count.is_none() ? -1 : count.as_int());
}

Value f_join(Evaluator&, const Value& v, const CallArgs& args) {
  Value sep = arg_or(args, 0, "d", Value(""));
  Value attribute = arg_or(args, 1, "attribute", Value::none());
  MarkedText out;
  bool first = true;
  for (const auto& item : v.iterate()) {
    if (!first) append_value(out, sep);
    first = false;
    append_value(out, attribute.is_none() ? item : resolve_attribute(item, attribute.to_str()));
  }
  return Value(std::move(out));
}

Value f_tojson(Evaluator&, const Value& v, const CallArgs& args) {
  JsonStyle style;
  bool ensure_ascii = arg_or(args, 0, "ensure_ascii", Value(false)).truthy();
  Value indent = arg_or(args, 1, "indent", Value::none());
  Value separators = arg_or(args, 2, "separators", Value::none());
  style.sort_keys = arg_or(args, 3, "sort_keys", Value(false)).truthy();
  if (!indent.is_none()) {
    style.indent = static_cast<int>(indent.as_int());
    style.item_separator = ",";
  }
  if (separators.is_list() && separators.items().size() == 2) {
    style.item_separator = separators.items()[0].to_str();
    style.key_separator = separators.items()[1].to_str();
  }
  std::string json = to_json(v, style);
  if (!ensure_ascii) return Value(json);
  std::string out;
  for (char32_t c : utf8_decode(json)) {
    char buf[16];
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      char32_t x = c - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 + (x >> 10)),
                    static_cast<unsigned>(0xdc00 + (x & 0x3ff)));
      out += buf;
    }
  }
  return Value(out);
}

Value f_first(Evaluator&, const Value& v, const CallArgs&) {
  ValueList items = v.iterate();
  if (items.empty()) return Value::undefined("UndefinedError: No first item, sequence was empty.");
  return items.front();
}

Value f_last(Evaluator&, const Value& v, const CallArgs&) {
  ValueList items = v.iterate();
  if (items.empty()) return Value::undefined("UndefinedError: No last item, sequence was empty.");
  return items.back();
}

Value f_list(Evaluator&, const Value& v, const CallArgs&) { return Value::list(v.iterate()); }

Value f_items(Evaluator&, const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::generator({});
  if (!v.is_dict()) raise("TypeError: Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [k, x] : v.dict_items().items) out.push_back(Value::tuple({k, x}));
  return Value::generator(std::move(out));
}

Value f_dictsort(Evaluator&, const Value& v, const CallArgs& args) {
  if (v.is_undefined()) raise_undefined(v);
  if (!v.is_dict()) raise("AttributeError: '" + v.type_name() + "' object has no attribute 'items'");
  bool case_sensitive = arg_or(args, 0, "case_sensitive", Value(false)).truthy();
  std::string by = arg_or(args, 1, "by", Value("key")).to_str();
  bool reverse = arg_or(args, 2, "reverse", Value(false)).truthy();
  ValueList out;
  for (const auto& [k, x] : v.dict_items().items) out.push_back(Value::tuple({k, x}));
  size_t pos = by == "value" ? 1 : 0;
  std::stable_sort(out.begin(), out.end(), [&](const Value& a, const Value& b) {
    Value ka = sort_key(a.items()[pos], case_sensitive), kb = sort_key(b.items()[pos], case_sensitive);
    return reverse ? less_than(kb, ka) : less_than(ka, kb);
  });
  return Value::list(std::move(out));
}

Value f_sort(Evaluator&, const Value& v, const CallArgs& args) {
  bool reverse = arg_or(args, 0, "reverse", Value(false)).truthy();
  bool case_sensitive = arg_or(args, 1, "case_sensitive", Value(false)).truthy();
  Value attribute = arg_or(args, 2, "attribute", Value::none());
  ValueList items = v.iterate();
  auto key = [&](const Value& x) {
    return sort_key(attribute.is_none() ? x : resolve_attribute(x, attribute.to_str()), case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? less_than(key(b), key(a)) : less_than(key(a), key(b));
  });
  return Value::list(std::move(items));
}

Value f_unique(Evaluator&, const Value& v, const CallArgs& args) {
  bool case_sensitive = arg_or(args, 0, "case_sensitive", Value(false)).truthy();
  Value attribute = arg_or(args, 1, "attribute", Value::none());
  ValueList out, seen;
  for (const auto& item : v.iterate()) {
    Value k = sort_key(attribute.is_none() ? item : resolve_attribute(item, attribute.to_str()), case_sensitive);
    if ((k.is_list() && !k.is_tuple()) || k.is_dict()) raise("TypeError: unhashable type: '" + k.type_name() + "'");
    bool dup = false;
    for (const auto& s : seen) dup = dup || equals(s, k);
    if (!dup) {
      seen.push_back(k);
      out.push_back(item);
    }
  }
  return Value::generator(std::move(out));
}

Value min_max(const Value& v, const CallArgs& args, bool is_max) {
  bool case_sensitive = arg_or(args, 0, "case_sensitive", Value(false)).truthy();
  Value attribute = arg_or(args, 1, "attribute", Value::none());
  ValueList items = v.iterate();
  if (items.empty()) return Value::undefined(std::string("UndefinedError: No aggregated item, sequence was empty."));
  auto key = [&](const Value& x) {
    return sort_key(attribute.is_none() ? x : resolve_attribute(x, attribute.to_str()), case_sensitive);
  };
  Value best = items[0];
  for (size_t i = 1; i < items.size(); ++i) {
    if (is_max ? less_than(key(best), key(items[i])) : less_than(key(items[i]), key(best))) best = items[i];
  }
  return best;
}
Value f_min(Evaluator&, const Value& v, const CallArgs& args) { return min_max(v, args, false); }
Value f_max(Evaluator&, const Value& v, const CallArgs& args) { return min_max(v, args, true); }

Value f_sum(Evaluator&, const Value& v, const CallArgs& args) {
  Value attribute = arg_or(args, 0, "attribute", Value::none());
  Value total = arg_or(args, 1, "start", Value(static_cast<int64_t>(0)));
  for (const auto& item : v.iterate()) {
    total = binary_op("+", total, attribute.is_none() ? item : resolve_attribute(item, attribute.to_str()));
  }
  return total;
}

// select/reject/selectattr/rejectattr share this: keep items whose (attribute) passes the test.
Value select_items(Evaluator& ev, const Value& v, const CallArgs& args, bool by_attribute, bool keep) {
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty()) raise("TypeError: missing attribute argument");
    attribute = args.positional[0].to_str();
    next = 1;
  }
  std::string test;
  CallArgs test_args;
  if (args.positional.size() > next) {
    test = args.positional[next].to_str();
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next) + 1, args.positional.end());
    test_args.keyword = args.keyword;
  }
  ValueList out;
  if (!v.truthy()) return Value::generator({});  // Jinja: `if value:` guards the loop
  for (const auto& item : v.iterate()) {
    Value subject = by_attribute ? resolve_attribute(item, attribute) : item;
    bool pass = test.empty() ? subject.truthy() : apply_test(ev, test, subject, test_args);
    if (pass == keep) out.push_back(item);
  }
  return Value::generator(std::move(out));
}
Value f_select(Evaluator& ev, const Value& v, const CallArgs& a) { return select_items(ev, v, a, false, true); }
Value f_reject(Evaluator& ev, const Value& v, const CallArgs& a) { return select_items(ev, v, a, false, false); }
Value f_selectattr(Evaluator& ev, const Value& v, const CallArgs& a) { return select_items(ev, v, a, true, true); }
Value f_rejectattr(Evaluator& ev, const Value& v, const CallArgs& a) { return select_items(ev, v, a, true, false); }

Value f_map(Evaluator& ev, const Value& v, const CallArgs& args) {
  ValueList out;
  if (!v.truthy()) return Value::generator({});  // Jinja: `if value:` guards the loop
  const Value* attribute = nullptr;
  for (const auto& [k, x] : args.keyword) {
    if (k == "attribute") attribute = &x;
  }
  if (attribute) {
    Value fallback = arg_or(CallArgs{{}, args.keyword}, static_cast<size_t>(-1), "default", Value());
    bool has_default = args.get(static_cast<size_t>(-1), "default") != nullptr;
    for (const auto& item : v.iterate()) {
      Value r = resolve_attribute(item, attribute->to_str());
      out.push_back(r.is_undefined() && has_default ? fallback : r);
    }
    return Value::generator(std::move(out));
  }
  if (args.positional.empty()) raise("FilterArgumentError: map requires a filter argument");
  std::string filter = args.positional[0].to_str();
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const auto& item : v.iterate()) out.push_back(apply_filter(ev, filter, item, rest));
  return Value::generator(std::move(out));
}

Value f_int(Evaluator&, const Value& v, const CallArgs& args) {
  Value fallback = arg_or(args, 0, "default", Value(static_cast<int64_t>(0)));
  if (v.is_undefined()) raise_undefined(v);
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return Value(static_cast<int64_t>(v.as_double()));
  if (v.is_string()) {
    std::string s = py_strip(v.str(), Value::none(), true, true);
    try {
      size_t used = 0;
      int64_t r = std::stoll(s, &used, static_cast<int>(arg_or(args, 1, "base", Value(static_cast<int64_t>(10))).as_int()));
      if (used == s.size()) return Value(r);
    } catch (...) {
    }
    try {
      size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size()) return Value(static_cast<int64_t>(d));
    } catch (...) {
    }
  }
  return fallback;
}

Value f_float(Evaluator&, const Value& v, const CallArgs& args) {
  Value fallback = arg_or(args, 0, "default", Value(0.0));
  if (v.is_undefined()) raise_undefined(v);
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    try {
      size_t used = 0;
      std::string s = py_strip(v.str(), Value::none(), true, true);
      double d = std::stod(s, &used);
      if (used == s.size()) return Value(d);
    } catch (...) {
    }
  }
  return fallback;
}

Value f_abs(Evaluator&, const Value& v, const CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_number()) {
    if (v.as_int() == INT64_MIN) raise("OverflowError: integer result does not fit in 64 bits");
    return Value(static_cast<int64_t>(std::llabs(v.as_int())));
  }
  raise("TypeError: bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Evaluator&, const Value& v, const CallArgs& args) {
  int64_t precision = arg_or(args, 0, "precision", Value(static_cast<int64_t>(0))).as_int();
  std::string method = arg_or(args, 1, "method", Value("common")).to_str();
  if (!v.is_number()) raise("TypeError: type " + v.type_name() + " doesn't define __round__ method");
  if ((v.is_int() || v.is_bool()) && method == "common" && precision >= 0) return Value(v.as_int());  // round(int) is int
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  double r;
  if (method == "ceil") r = std::ceil(x);
  else if (method == "floor") r = std::floor(x);
  else r = std::nearbyint(x);  // Python's round(): half to even
  return Value(r / scale);
}

Value f_safe(Evaluator&, const Value& v, const CallArgs&) { return v.is_safe() ? v : to_text(v).as_markup(); }

Value f_escape(Evaluator&, const Value& v, const CallArgs&) {
  return v.is_safe() ? v : map_runs(to_text(v), html_escape).as_markup();
}

Value f_forceescape(Evaluator&, const Value& v, const CallArgs&) { return map_runs(to_text(v), html_escape).as_markup(); }

Value f_indent(Evaluator&, const Value& v, const CallArgs& args) {
  // Jinja appends "\n" with +=: only strings work (a list would gain characters, then fail).
  if (v.is_undefined()) raise_undefined(v);
  if (v.is_list() && !v.is_tuple()) raise("AttributeError: 'list' object has no attribute 'splitlines'");
  if (v.is_tuple()) raise("TypeError: can only concatenate tuple (not \"str\") to tuple");
  if (!v.is_string()) raise("TypeError: unsupported operand type(s) for +=: '" + v.type_name() + "' and 'str'");
  Value width = arg_or(args, 0, "width", Value(static_cast<int64_t>(4)));
  bool first = arg_or(args, 1, "first", Value(false)).truthy();
  bool blank = arg_or(args, 2, "blank", Value(false)).truthy();
  std::string pad = width.is_string() ? width.str() : std::string(static_cast<size_t>(width.as_int()), ' ');
  ValueList lines = py_split(Value(v.to_str() + "\n"), Value("\n"), -1, false);
  lines.pop_back();  // splitlines() of s + "\n"
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i].str();
    if (i > 0) {
      out += "\n";
      if (blank || !line.empty()) out += pad;
    }
    out += line;
  }
  if (first) out = pad + out;
  return Value(out);
}

Value f_batch(Evaluator&, const Value& v, const CallArgs& args) {
  int64_t n = arg_or(args, 0, "linecount", Value(static_cast<int64_t>(1))).as_int();
  const Value* fill = args.get(1, "fill_with");
  ValueList out, cur;
  for (const auto& item : v.iterate()) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none()) {
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::generator(std::move(out));
}

Value f_reverse(Evaluator&, const Value& v, const CallArgs&) {
  if (v.is_string() && v.has_marks()) {
    ValueList chars = v.iterate();
    MarkedText out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) append_value(out, *it);
    return Value(std::move(out));
  }
  if (v.is_string()) {
    std::u32string u = utf8_decode(v.str());
    std::reverse(u.begin(), u.end());
    return Value(utf8_encode(u));
  }
  if (!(v.is_listlike() || v.is_dict() || v.is_undefined())) raise("FilterArgumentError: argument must be iterable");
  ValueList items = v.iterate();
  std::reverse(items.begin(), items.end());
  return Value::generator(std::move(items));
}

Value f_format(Evaluator&, const Value& v, const CallArgs& args) {
  return Value(percent_format(v.to_str(), Value::tuple(args.positional), v.is_safe()));
}

Value f_attr(Evaluator&, const Value& v, const CallArgs& args) {
  // getattr only: dict keys are not attributes.
  std::string name = arg_or(args, 0, "name", Value("")).to_str();
  if (v.is_undefined()) raise_undefined(v);
  if (v.is_namespace()) return get_attr(v, name);
  if (auto m = bound_method(v, name)) return *m;
  return Value::undefined("UndefinedError: '" + v.type_name() + " object' has no attribute '" + name + "'");
}

Value f_center(Evaluator&, const Value& v, const CallArgs& args) {
  std::string s = v.to_str();
  int64_t width = arg_or(args, 0, "width", Value(static_cast<int64_t>(80))).as_int();
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return like(v, s);
  int64_t total = width - len, left = total / 2 + (total & width & 1);
  return like(v, std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(total - left), ' '));
}

// Jinja counts runs of \w (letters, digits, underscore) in str(value).
Value f_wordcount(Evaluator&, const Value& v, const CallArgs&) {
  auto is_word = [](char32_t c) {
    if (c < 0x80) return std::isalnum(static_cast<int>(c)) != 0 || c == '_';
    const bool symbol_or_space = is_py_space(c) || (c >= 0x2000 && c <= 0x2bff) || (c >= 0x3000 && c <= 0x303f) ||
                                 (c >= 0xff00 && c <= 0xff0f) || (c >= 0x1f000 && c <= 0x1faff) || c == 0xd7 || c == 0xf7 ||
                                 (c >= 0xa1 && c <= 0xbf && c != 0xaa && c != 0xb5 && c != 0xba);
    return !symbol_or_space;
  };
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : utf8_decode(v.to_str())) {
    const bool w = is_word(c);
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value(words);
}

// pprint.pformat: repr with dict keys sorted; Markup and Undefined show their class.
std::string pformat(const Value& v) {
  if (v.is_undefined()) return "Undefined";
  if (v.is_string()) return v.is_safe() ? "Markup(" + string_repr(v.str()) + ")" : string_repr(v.str());
  if (v.is_list()) {
    std::string out = v.is_tuple() ? "(" : "[";
    for (size_t i = 0; i < v.items().size(); ++i) out += (i ? ", " : "") + pformat(v.items()[i]);
    if (v.is_tuple() && v.items().size() == 1) out += ",";
    return out + (v.is_tuple() ? ")" : "]");
  }
  if (v.is_dict()) {
    auto items = v.dict_items().items;
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return less_than(a.first, b.first); });
    std::string out = "{";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + pformat(items[i].first) + ": " + pformat(items[i].second);
    return out + "}";
  }
  return v.repr();
}

Value f_pprint(Evaluator&, const Value& v, const CallArgs&) { return Value(pformat(v)); }

// groupby(attribute, default=None, case_sensitive=False): sorted (grouper, list) pairs; the
// pairs also answer .grouper and .list (Jinja's _GroupTuple).
Value f_groupby(Evaluator&, const Value& v, const CallArgs& args) {
  const Value* attribute = args.get(0, "attribute");
  if (!attribute) raise("TypeError: do_groupby() missing 1 required positional argument: 'attribute'");
  const Value fallback = arg_or(args, 1, "default", Value::none());
  const bool case_sensitive = arg_or(args, 2, "case_sensitive", Value(false)).truthy();
  auto key_of = [&](const Value& item) {
    Value k = resolve_attribute(item, attribute->to_str());
    if (k.is_undefined() && !fallback.is_none()) k = fallback;
    return k;
  };
  ValueList items = v.iterate();
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return less_than(sort_key(key_of(a), case_sensitive), sort_key(key_of(b), case_sensitive));
  });
  ValueList groups;
  for (size_t i = 0; i < items.size();) {
    const Value key = sort_key(key_of(items[i]), case_sensitive);
    ValueList members;
    size_t j = i;
    while (j < items.size() && equals(sort_key(key_of(items[j]), case_sensitive), key)) members.push_back(items[j++]);
    groups.push_back(Value::tuple({key_of(items[i]), Value::list(std::move(members))}));
    i = j;
  }
  return Value::list(std::move(groups));
}

Value f_truncate(Evaluator&, const Value& v, const CallArgs& args) {
  const int64_t length = arg_or(args, 0, "length", Value(static_cast<int64_t>(255))).as_int();
  const bool killwords = arg_or(args, 1, "killwords", Value(false)).truthy();
  const std::u32string end = utf8_decode(arg_or(args, 2, "end", Value("...")).to_str());
  const int64_t leeway = arg_or(args, 3, "leeway", Value(static_cast<int64_t>(5))).as_int();
  if (length < static_cast<int64_t>(end.size())) {
    raise("AssertionError: expected length >= " + std::to_string(end.size()) + ", got " + std::to_string(length));
  }
  const std::u32string s = utf8_decode(v.to_str());
  if (static_cast<int64_t>(s.size()) <= length + leeway) return v.is_string() ? v : Value(v.to_str());
  std::u32string head = s.substr(0, static_cast<size_t>(length) - end.size());
  if (!killwords) {
    size_t space = head.rfind(U' ');
    if (space != std::u32string::npos) head.resize(space);
  }
  return Value(utf8_encode(head + end));
}

Value f_slice(Evaluator&, const Value& v, const CallArgs& args) {
  const int64_t slices = arg_or(args, 0, "slices", Value(static_cast<int64_t>(1))).as_int();
  const Value* fill = args.get(1, "fill_with");
  if (slices <= 0) raise("ZeroDivisionError: integer division or modulo by zero");
  const ValueList seq = v.iterate();
  const int64_t length = static_cast<int64_t>(seq.size()), per = length / slices, extra = length % slices;
  ValueList out;
  int64_t offset = 0;
  for (int64_t k = 0; k < slices; ++k) {
    const int64_t start = offset + k * per;
    if (k < extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    ValueList part(seq.begin() + start, seq.begin() + end);
    if (fill && !fill->is_none() && k >= extra) part.push_back(*fill);
    out.push_back(Value::list(std::move(part)));
  }
  return Value::generator(std::move(out));
}

// markupsafe's striptags: drop comments and tags, unescape entities, collapse whitespace.
Value f_striptags(Evaluator&, const Value& v, const CallArgs&) {
  const std::string s = v.to_str();
  std::string text;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 4, "<!--") == 0) {
      size_t end = s.find("-->", i + 4);
      if (end != std::string::npos) {
        i = end + 3;
        continue;
      }
    }
    if (s[i] == '<') {
      size_t end = s.find('>', i + 1);
      if (end != std::string::npos && end > i + 1) {
        i = end + 1;
        continue;
      }
    }
    text += s[i++];
  }
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#34;", "\""}, {"&#39;", "'"}, {"&nbsp;", "\u00a0"}};
  std::string unescaped;
  for (size_t i = 0; i < text.size();) {
    bool hit = false;
    if (text[i] == '&') {
      for (const auto& [entity, ch] : kEntities) {
        if (text.compare(i, std::strlen(entity), entity) == 0) {
          unescaped += ch;
          i += std::strlen(entity);
          hit = true;
          break;
        }
      }
    }
    if (!hit) unescaped += text[i++];
  }
  std::string out;
  for (const auto& word : py_split(Value(unescaped), Value::none(), -1, false)) {
    if (!out.empty()) out += ' ';
    out += word.str();
  }
  return Value(out);
}

struct FilterEntry {
  Filter fn;
  MarkPolicy marks = MarkPolicy::kDerived;
};

constexpr MarkPolicy kPass = MarkPolicy::kHandled, kPrecise = MarkPolicy::kFromSubject;

// Filters not listed as kPass (kHandled) or kPrecise (kFromSubject) are kDerived (marks.h).
const std::unordered_map<std::string, FilterEntry>& registry() {
  static const std::unordered_map<std::string, FilterEntry> filters = {
      {"default", {f_default, kPass}}, {"d", {f_default, kPass}}, {"length", {f_length, kPass}},
      {"count", {f_length, kPass}}, {"string", {f_string, kPrecise}}, {"trim", {f_trim, kPrecise}},
      {"upper", {f_upper, kPrecise}}, {"lower", {f_lower, kPrecise}}, {"capitalize", {f_capitalize}},
      {"title", {f_title}}, {"replace", {f_replace, kPrecise}}, {"join", {f_join, kPrecise}},
      {"tojson", {f_tojson}}, {"first", {f_first, kPass}}, {"last", {f_last, kPass}}, {"list", {f_list, kPass}},
      {"items", {f_items, kPass}}, {"dictsort", {f_dictsort, kPass}}, {"sort", {f_sort, kPass}},
      {"unique", {f_unique, kPass}}, {"min", {f_min, kPass}}, {"max", {f_max, kPass}}, {"sum", {f_sum, kPass}},
      {"select", {f_select, kPass}}, {"reject", {f_reject, kPass}}, {"selectattr", {f_selectattr, kPass}},
      {"rejectattr", {f_rejectattr, kPass}}, {"map", {f_map, kPass}}, {"int", {f_int, kPass}},
      {"float", {f_float, kPass}}, {"abs", {f_abs, kPass}}, {"round", {f_round, kPass}}, {"safe", {f_safe, kPrecise}},
      {"escape", {f_escape, kPrecise}}, {"e", {f_escape, kPrecise}}, {"forceescape", {f_forceescape, kPrecise}},
      {"indent", {f_indent}}, {"batch", {f_batch, kPass}}, {"reverse", {f_reverse, kPrecise}}, {"format", {f_format}},
      {"attr", {f_attr, kPass}}, {"center", {f_center}}, {"wordcount", {f_wordcount, kPass}}, {"pprint", {f_pprint}},
      {"truncate", {f_truncate}}, {"slice", {f_slice, kPass}}, {"striptags", {f_striptags}},
      {"groupby", {f_groupby, kPass}},
  };
  return filters;
}

}  // namespace

bool has_filter(const std::string& name) { return registry().count(name) != 0; }

Value apply_filter(Evaluator& ev, const std::string& name, const Value& subject, const CallArgs& args) {
  auto it = registry().find(name);
  if (it == registry().end()) raise("TemplateRuntimeError: No filter named '" + name + "' found.");
  return apply_mark_policy(it->second.marks, it->second.fn(ev, subject, args), subject, args);
}

}  // namespace lemma::jinja
