// Python str/dict/list methods callable from templates, with the ImmutableSandboxedEnvironment's
// rule that methods mutating lists and dicts are unsafe.
#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "lemma/tokenizer/jinja/builtins.h"

namespace lemma::jinja {

bool is_py_space(char32_t c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

namespace {

// Code point range [b, e) of `u` that strip keeps.
std::pair<size_t, size_t> strip_bounds(const std::u32string& u, const Value& chars, bool left, bool right) {
  std::u32string set;
  bool whitespace = chars.is_none() || chars.is_undefined();
  if (!whitespace) set = utf8_decode(chars.to_str());
  auto strip_char = [&](char32_t c) { return whitespace ? is_py_space(c) : set.find(c) != std::u32string::npos; };
  size_t b = 0, e = u.size();
  if (left) {
    while (b < e && strip_char(u[b])) ++b;
  }
  if (right) {
    while (e > b && strip_char(u[e - 1])) --e;
  }
  return {b, e};
}

}  // namespace

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  std::u32string u = utf8_decode(s);
  auto [b, e] = strip_bounds(u, chars, left, right);
  return utf8_encode(u.substr(b, e - b));
}

Value py_strip(const Value& s, const Value& chars, bool left, bool right) {
  if (!s.has_marks()) return Value(py_strip(s.str(), chars, left, right));
  const CodePoints cp(s.str());
  auto [b, e] = strip_bounds(cp.cps, chars, left, right);
  return code_point_slice(s, cp, b, e);
}

ValueList py_split(const Value& str, const Value& sep, int64_t maxsplit, bool from_right) {
  ValueList out;
  if (sep.is_none() || sep.is_undefined()) {
    const CodePoints cp(str.str());
    const std::u32string& u = cp.cps;
    std::vector<std::pair<size_t, size_t>> words;  // code point ranges
    if (!from_right) {
      size_t i = 0;
      while (i < u.size()) {
        while (i < u.size() && is_py_space(u[i])) ++i;
        if (i >= u.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t e = u.size();
          while (e > i && is_py_space(u[e - 1])) --e;
          words.emplace_back(i, e);
          break;
        }
        size_t j = i;
        while (j < u.size() && !is_py_space(u[j])) ++j;
        words.emplace_back(i, j);
        i = j;
      }
    } else {
      size_t i = u.size();
      while (i > 0) {
        while (i > 0 && is_py_space(u[i - 1])) --i;
        if (i == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t b = 0;
          while (b < i && is_py_space(u[b])) ++b;
          words.emplace_back(b, i);
          break;
        }
        size_t j = i;
        while (j > 0 && !is_py_space(u[j - 1])) --j;
        words.emplace_back(j, i);
        i = j;
      }
      std::reverse(words.begin(), words.end());
    }
    for (const auto& [b, e] : words) out.push_back(code_point_slice(str, cp, b, e));
    return out;
  }
  const std::string& s = str.str();
  const std::string& d = sep.str();
  if (!sep.is_string()) raise("TypeError: must be str or None, not " + sep.type_name());
  if (d.empty()) raise("ValueError: empty separator");
  std::vector<std::pair<size_t, size_t>> parts;  // byte ranges
  if (!from_right) {
    size_t start = 0;
    for (;;) {
      size_t p = s.find(d, start);
      if (p == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) {
        parts.emplace_back(start, s.size());
        break;
      }
      parts.emplace_back(start, p);
      start = p + d.size();
    }
  } else {
    size_t end = s.size();
    for (;;) {
      size_t p = end >= d.size() ? s.rfind(d, end - d.size()) : std::string::npos;
      if (p == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) {
        parts.emplace_back(0, end);
        break;
      }
      parts.emplace_back(p + d.size(), end);
      end = p;
    }
    std::reverse(parts.begin(), parts.end());
  }
  for (const auto& [b, e] : parts) out.push_back(byte_slice(str, b, e));
  return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    std::u32string u = utf8_decode(s);
    int64_t n = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || n < count) {
        out += repl;
        ++n;
      }
      if (i < u.size()) out += utf8_encode(u.substr(i, 1));
    }
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  for (;;) {
    size_t p = s.find(old, start);
    if (p == std::string::npos || (count >= 0 && n >= count)) break;
    out += s.substr(start, p - start) + repl;
    start = p + old.size();
    ++n;
  }
  return out + s.substr(start);
}

Value py_replace(const Value& str, const std::string& old, const Value& repl, int64_t count) {
  const std::string& s = str.str();
  if (!str.has_marks() && !repl.has_marks()) return Value(py_replace(s, old, repl.str(), count));
  MarkedText out;
  int64_t n = 0;
  if (old.empty()) {  // the replacement goes before every code point and at the end
    const CodePoints cp(s);
    if (!cp.exact) return Value(MarkedText(py_replace(s, old, repl.str(), count), true));
    for (size_t i = 0; i <= cp.cps.size(); ++i) {
      if (count < 0 || n < count) {
        append_value(out, repl);
        ++n;
      }
      if (i < cp.cps.size()) out.append_slice(s, str.marks(), cp.offsets[i], cp.offsets[i + 1]);
    }
    return Value(std::move(out));
  }
  size_t start = 0;
  for (;;) {
    size_t p = s.find(old, start);
    if (p == std::string::npos || (count >= 0 && n >= count)) break;
    out.append_slice(s, str.marks(), start, p);
    if (MarkedText::overlaps(str.marks(), p, p + old.size())) out.append(repl.str(), true);
    else append_value(out, repl);
    start = p + old.size();
    ++n;
  }
  out.append_slice(s, str.marks(), start, s.size());
  return Value(std::move(out));
}

// Case mapping for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (what chat content
// realistically holds); other scripts are left unchanged.
char32_t cp_upper(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if (c >= 0xe0 && c <= 0xfe && c != 0xf7) return c - 32;
  if (c == 0xff) return 0x178;
  if (c >= 0x100 && c <= 0x17f && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17f) {
    bool odd_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    if (odd_lower ? (c % 2 == 0) : (c % 2 == 1)) return c - 1;
    return c;
  }
  if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) return c - 32;
  if (c == 0x3c2) return 0x3a3;
  if (c >= 0x430 && c <= 0x44f) return c - 32;
  if (c >= 0x450 && c <= 0x45f) return c - 80;
  return c;
}

char32_t cp_lower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 32;
  if (c == 0x178) return 0xff;
  if (c >= 0x100 && c <= 0x17f && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17f) {
    bool odd_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e);
    if (odd_lower ? (c % 2 == 1) : (c % 2 == 0)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
  if (c >= 0x410 && c <= 0x42f) return c + 32;
  if (c >= 0x400 && c <= 0x40f) return c + 80;
  return c;
}

bool cp_is_cased(char32_t c) { return cp_upper(c) != c || cp_lower(c) != c || c == 0xdf; }

namespace {

bool is_ascii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

}  // namespace

std::string py_upper(const std::string& s) {
  if (is_ascii(s)) {
    std::string out = s;
    for (auto& c : out) {
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    }
    return out;
  }
  std::u32string out;
  for (char32_t c : utf8_decode(s)) {
    if (c == 0xdf) out += U"SS";
    else out += cp_upper(c);
  }
  return utf8_encode(out);
}

std::string py_lower(const std::string& s) {
  if (is_ascii(s)) {
    std::string out = s;
    for (auto& c : out) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    }
    return out;
  }
  std::u32string out;
  for (char32_t c : utf8_decode(s)) out += cp_lower(c);
  return utf8_encode(out);
}

std::string py_capitalize(const std::string& s) {
  std::u32string u = utf8_decode(py_lower(s));
  if (!u.empty()) u[0] = cp_upper(u[0]);
  return utf8_encode(u);
}

namespace {

std::string py_title(const std::string& s) {
  std::u32string u = utf8_decode(s);
  bool prev_cased = false;
  for (auto& c : u) {
    bool cased = cp_is_cased(c);
    c = cased ? (prev_cased ? cp_lower(c) : cp_upper(c)) : c;
    prev_cased = cased;
  }
  return utf8_encode(u);
}

bool matches_affix(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) raise("TypeError: " + std::string(prefix ? "startswith" : "endswith") +
                              " first arg must be str or a tuple of str, not " + a.type_name());
    const std::string& x = a.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) {
    for (const auto& a : affix.items()) {
      if (one(a)) return true;
    }
    return false;
  }
  return one(affix);
}

int64_t int_arg(const CallArgs& args, size_t i, const std::string& name, int64_t fallback) {
  const Value* v = args.get(i, name);
  if (!v || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool()) raise("TypeError: '" + v->type_name() + "' object cannot be interpreted as an integer");
  return v->as_int();
}

std::string str_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      size_t end = fmt.find('}', i);
      if (end == std::string::npos) raise("ValueError: Single '{' encountered in format string");
      // {field[.attr|[key]]...[!r|!s][:spec]}
      std::string field = fmt.substr(i + 1, end - i - 1), spec;
      size_t colon = field.find(':');
      if (colon != std::string::npos) {
        spec = field.substr(colon + 1);
        field.resize(colon);
      }
      char conversion = '\0';
      if (field.size() >= 2 && field[field.size() - 2] == '!') {
        conversion = field.back();
        field.resize(field.size() - 2);
      }
      size_t name_end = field.find_first_of(".[");
      std::string arg_name = field.substr(0, name_end);
      const Value* v = nullptr;
      if (arg_name.empty()) {
        v = args.get(auto_index++, "\x01");
      } else if (std::isdigit(static_cast<unsigned char>(arg_name[0]))) {
        size_t index = 0;
        std::from_chars(arg_name.data(), arg_name.data() + arg_name.size(), index);
        v = args.get(index, "\x01");
      } else {
        v = args.get(static_cast<size_t>(-1), arg_name);
      }
      if (!v) {
        if (arg_name.empty() || std::isdigit(static_cast<unsigned char>(arg_name[0]))) {
          raise("IndexError: Replacement index out of range for positional args tuple");
        }
        raise("KeyError: " + string_repr(arg_name));
      }
      Value value = *v;
      for (size_t p = name_end; p != std::string::npos && p < field.size();) {
        if (field[p] == '.') {
          size_t q = field.find_first_of(".[", p + 1);
          value = get_attr(value, field.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1));
          p = q;
        } else {
          size_t q = field.find(']', p);
          if (q == std::string::npos) raise("ValueError: Missing ']' in format string");
          std::string key = field.substr(p + 1, q - p - 1);
          int64_t k = 0;
          bool numeric = !key.empty() && std::from_chars(key.data(), key.data() + key.size(), k).ec == std::errc();
          value = get_item(value, numeric ? Value(k) : Value(key));
          p = q + 1 < field.size() ? q + 1 : std::string::npos;
        }
        if (value.is_undefined()) raise_undefined(value);
      }
      if (conversion == 'r') value = Value(value.repr());
      else if (conversion == 's') value = Value(value.to_str());
      out += format_with_spec(value, spec);
      i = end;
    } else {
      out += c;
    }
  }
  return out;
}

Value str_method_plain(const Value& self, const std::string& name, const CallArgs& args);

// Methods of a Markup string escape their string arguments and return Markup (markupsafe).
Value str_method(const Value& self, const std::string& name, const CallArgs& args) {
  if (!self.is_safe()) return str_method_plain(self, name, args);
  auto escaped = [](const Value& v) { return v.is_string() && !v.is_safe() ? map_runs(v, html_escape) : v; };
  CallArgs safe_args = args;
  if (name == "join" && !args.positional.empty()) {
    ValueList items;
    for (const auto& item : args.positional[0].iterate()) items.push_back(escaped(item));
    safe_args.positional[0] = Value::list(std::move(items));
  } else if (name == "replace" || name == "format") {
    for (auto& v : safe_args.positional) v = escaped(v);
    for (auto& [k, v] : safe_args.keyword) v = escaped(v);
  }
  Value result = str_method_plain(self, name, safe_args);
  if (result.is_list()) {  // split() and friends give Markup pieces
    ValueList pieces;
    for (const auto& p : result.items()) pieces.push_back(p.is_string() ? p.as_markup() : p);
    return Value::list(std::move(pieces));
  }
  return result.is_string() ? result.as_markup() : result;
}

Value str_method_plain(const Value& self, const std::string& name, const CallArgs& args) {
  const std::string& s = self.str();
  Value none = Value::none();
  if (name == "strip") return py_strip(self, arg_or(args, 0, "chars", none), true, true);
  if (name == "lstrip") return py_strip(self, arg_or(args, 0, "chars", none), true, false);
  if (name == "rstrip") return py_strip(self, arg_or(args, 0, "chars", none), false, true);
  if (name == "split" || name == "rsplit") {
    return Value::list(py_split(self, arg_or(args, 0, "sep", none), int_arg(args, 1, "maxsplit", -1), name == "rsplit"));
  }
  if (name == "splitlines") {
    ValueList lines;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        lines.emplace_back(s.substr(start, i - start));
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < s.size()) lines.emplace_back(s.substr(start));
    return Value::list(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    const Value* a = args.get(0, "prefix");
    if (!a) raise("TypeError: " + name + "() takes at least 1 argument (0 given)");
    return Value(matches_affix(s, *a, name == "startswith"));
  }
  if (name == "replace") {
    const Value* o = args.get(0, "old");
    const Value* r = args.get(1, "new");
    if (!o || !r || !o->is_string() || !r->is_string()) raise("TypeError: replace() arguments must be str");
    return py_replace(self, o->str(), *r, int_arg(args, 2, "count", -1));
  }
  if (name == "upper") return map_runs(self, py_upper);
  if (name == "lower" || name == "casefold") return map_runs(self, py_lower);
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const Value* a = args.get(0, "sub");
    if (!a || !a->is_string()) raise("TypeError: must be str");
    const std::string& sub = a->str();
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value(n);
    }
    size_t p = (name == "find" || name == "index") ? s.find(sub) : s.rfind(sub);
    if (p == std::string::npos) {
      if (name == "index" || name == "rindex") raise("ValueError: substring not found");
      return Value(static_cast<int64_t>(-1));
    }
    return Value(static_cast<int64_t>(utf8_length(s.substr(0, p))));
  }
  if (name == "join") {
    const Value* a = args.get(0, "iterable");
    if (!a) raise("TypeError: join() takes exactly one argument (0 given)");
    MarkedText out;
    bool first = true;
    for (const auto& item : a->iterate()) {
      if (!item.is_string()) raise("TypeError: sequence item: expected str instance, " + item.type_name() + " found");
      if (!first) append_value(out, self);
      first = false;
      append_value(out, item);
    }
    return Value(std::move(out));
  }
  if (name == "format") return Value(str_format(s, args));
  if (name == "ljust" || name == "rjust" || name == "center" || name == "zfill") {
    const int64_t width = int_arg(args, 0, "width", 0);
    const std::u32string fill = utf8_decode(name == "zfill" ? std::string("0") : arg_or(args, 1, "fillchar", Value(" ")).to_str());
    if (fill.size() != 1) raise("TypeError: The fill character must be exactly one character long");
    const std::u32string u = utf8_decode(s);
    const int64_t len = static_cast<int64_t>(u.size());
    if (width <= len) return Value(s);
    const size_t pad = static_cast<size_t>(width - len);
    if (name == "ljust") return Value(s + utf8_encode(std::u32string(pad, fill[0])));
    if (name == "rjust") return Value(utf8_encode(std::u32string(pad, fill[0])) + s);
    if (name == "zfill") {
      const bool signed_ = !u.empty() && (u[0] == '+' || u[0] == '-');
      return Value(utf8_encode((signed_ ? u.substr(0, 1) : U"") + std::u32string(pad, U'0') + (signed_ ? u.substr(1) : u)));
    }
    const size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);  // CPython's centering
    return Value(utf8_encode(std::u32string(left, fill[0]) + u + std::u32string(pad - left, fill[0])));
  }
  if (name == "partition" || name == "rpartition") {
    const Value* a = args.get(0, "sep");
    if (!a || !a->is_string()) raise("TypeError: must be str");
    if (a->str().empty()) raise("ValueError: empty separator");
    const size_t p = name == "partition" ? s.find(a->str()) : s.rfind(a->str());
    if (p == std::string::npos) {
      return name == "partition" ? Value::tuple({Value(s), Value(""), Value("")}) : Value::tuple({Value(""), Value(""), Value(s)});
    }
    return Value::tuple({Value(s.substr(0, p)), *a, Value(s.substr(p + a->str().size()))});
  }
  if (name == "swapcase") {
    std::u32string u = utf8_decode(s);
    for (auto& c : u) c = cp_upper(c) != c ? cp_upper(c) : cp_lower(c);
    return Value(utf8_encode(u));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    std::string a = arg_or(args, 0, "prefix", Value("")).to_str();
    if (name == "removeprefix" && s.compare(0, a.size(), a) == 0 && a.size() <= s.size()) return Value(s.substr(a.size()));
    if (name == "removesuffix" && a.size() <= s.size() && s.compare(s.size() - a.size(), a.size(), a) == 0) {
      return Value(s.substr(0, s.size() - a.size()));
    }
    return Value(s);
  }
  auto all_of = [&](auto pred) {
    if (s.empty()) return Value(false);
    for (unsigned char c : s) {
      if (!pred(c)) return Value(false);
    }
    return Value(true);
  };
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return all_of([](unsigned char c) { return std::isdigit(c) != 0; });
  if (name == "isalpha") return all_of([](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; });
  if (name == "isalnum") return all_of([](unsigned char c) { return std::isalnum(c) != 0 || c >= 0x80; });
  if (name == "isspace") return all_of([](unsigned char c) { return is_py_space(c); });
  if (name == "islower") return Value(py_lower(s) == s && py_upper(s) != s);
  if (name == "isupper") return Value(py_upper(s) == s && py_lower(s) != s);
  raise("AttributeError: 'str' object has no attribute '" + name + "'");
}

Value dict_method(const Value& d, const std::string& name, const CallArgs& args) {
  if (name == "get") {
    const Value* k = args.get(0, "key");
    if (!k) raise("TypeError: get expected at least 1 argument, got 0");
    const Value* v = d.dict_items().find(*k);
    return v ? *v : arg_or(args, 1, "default", Value::none());
  }
  ValueList out;
  for (const auto& [k, v] : d.dict_items().items) {
    if (name == "keys") out.push_back(k);
    else if (name == "values") out.push_back(v);
    else out.push_back(Value::tuple({k, v}));
  }
  if (name == "copy") return Value::dict(d.dict_items());
  return Value::list(std::move(out));
}

Value list_method(const Value& l, const std::string& name, const CallArgs& args) {
  const Value* x = args.get(0, "value");
  if (name == "copy") return Value::list(l.items());
  // The immutable sandbox forbids append/extend/insert/remove/reverse/sort but (as Jinja2 3.1
  // does) not pop and clear, which mutate the list in place.
  if (name == "clear") {
    l.mutable_items().clear();
    return Value::none();
  }
  if (name == "pop") {
    ValueList& items = l.mutable_items();
    if (items.empty()) raise("IndexError: pop from empty list");
    int64_t n = static_cast<int64_t>(items.size());
    int64_t i = x ? x->as_int() : n - 1;
    if (i < 0) i += n;
    if (i < 0 || i >= n) raise("IndexError: pop index out of range");
    Value v = items[static_cast<size_t>(i)];
    items.erase(items.begin() + i);
    return v;
  }
  if (!x) raise("TypeError: " + name + "() takes exactly one argument (0 given)");
  int64_t n = 0;
  for (size_t i = 0; i < l.items().size(); ++i) {
    if (equals(l.items()[i], *x)) {
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++n;
    }
  }
  if (name == "index") raise("ValueError: " + x->repr() + " is not in list");
  return Value(n);
}

const std::unordered_set<std::string> kStrMethods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "replace", "upper",
    "lower", "casefold", "title", "capitalize", "find", "rfind", "index", "rindex", "count", "join", "format",
    "removeprefix", "removesuffix", "ljust", "rjust", "center", "zfill", "partition", "rpartition", "swapcase", "isdigit", "isnumeric", "isdecimal", "isalpha", "isalnum", "isspace",
    "islower", "isupper"};
const std::unordered_set<std::string> kDictMethods = {"get", "items", "keys", "values", "copy"};
const std::unordered_set<std::string> kDictUnsafe = {"clear", "pop", "popitem", "setdefault", "update"};
const std::unordered_set<std::string> kListMethods = {"index", "count", "copy", "pop", "clear"};
const std::unordered_set<std::string> kListUnsafe = {"append", "extend", "insert", "remove", "reverse", "sort"};

// str methods that mark exactly; the rest (format, ljust, title, partition, ...) are derived.
MarkPolicy str_mark_policy(const std::string& name) {
  static const std::unordered_set<std::string> kFromSubject = {"strip", "lstrip", "rstrip", "split", "rsplit",
                                                                "replace", "upper", "lower", "casefold"};
  if (name == "join") return MarkPolicy::kHandled;  // the items are its argument: both keep their marks
  return kFromSubject.count(name) ? MarkPolicy::kFromSubject : MarkPolicy::kDerived;
}

Value unsafe(const Value& obj, const std::string& name) {
  return Value::undefined("SecurityError: access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
}

}  // namespace

std::optional<Value> bound_method(const Value& obj, const std::string& name) {
  if (obj.is_string() && kStrMethods.count(name)) {
    return Value::callable("str." + name, [obj, name](Evaluator&, const CallArgs& args) {
      return apply_mark_policy(str_mark_policy(name), str_method(obj, name, args), obj, args);
    });
  }
  if (obj.is_dict()) {
    if (kDictUnsafe.count(name)) return unsafe(obj, name);
    if (kDictMethods.count(name)) {
      return Value::callable("dict." + name, [obj, name](Evaluator&, const CallArgs& args) { return dict_method(obj, name, args); });
    }
  }
  if (obj.is_tuple() && name != "index" && name != "count") return std::nullopt;  // tuples are immutable
  if (obj.is_list()) {
    if (kListUnsafe.count(name)) return unsafe(obj, name);
    if (kListMethods.count(name)) {
      return Value::callable("list." + name, [obj, name](Evaluator&, const CallArgs& args) { return list_method(obj, name, args); });
    }
  }
  return std::nullopt;
}

Value resolve_attribute(const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    int64_t index = 0;
    if (numeric) numeric = std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc();
    v = get_item(v, numeric ? Value(index) : Value(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

}  // namespace lemma::jinja
