// Template globals: range, namespace, dict, and transformers' raise_exception and strftime_now;
// plus Python's printf-style `str % args`.
#include <ctime>

#include "lemma/tokenizer/jinja/builtins.h"

namespace lemma::jinja {

std::string percent_format(const std::string& format, const Value& args, bool escape) {
  // Only a tuple supplies several arguments (a list is one value); a dict feeds %(name)s.
  ValueList values = args.is_tuple() ? args.items() : ValueList{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) raise("ValueError: incomplete format");
    if (format[i] == '%') {
      out += '%';
      continue;
    }
    std::string key;
    if (format[i] == '(') {
      size_t end = format.find(')', i);
      if (end == std::string::npos) raise("ValueError: incomplete format key");
      key = format.substr(i + 1, end - i - 1);
      i = end + 1;
    }
    std::string spec = "%";
    while (i < format.size() && std::string("-+ #0123456789.").find(format[i]) != std::string::npos) spec += format[i++];
    if (i >= format.size()) raise("ValueError: incomplete format");
    char conv = format[i];
    Value v;
    if (!key.empty()) {
      v = get_item(args, Value(key));
    } else {
      if (next >= values.size()) raise("TypeError: not enough arguments for format string");
      v = values[next++];
    }
    char buf[512];
    if (v.is_undefined() && conv != 's' && conv != 'r') raise_undefined(v);
    if (conv != 's' && conv != 'r' && !v.is_number()) {
      raise(std::string("TypeError: %") + conv + " format: a real number is required, not " + v.type_name());
    }
    if (spec.size() > 20) raise("ValueError: format specification too long");
    switch (conv) {
      case 's': out += escape && !v.is_safe() ? html_escape(v.to_str()) : v.to_str(); break;
      case 'r': out += v.repr(); break;
      case 'd':
      case 'i':
        std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), static_cast<long long>(v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int()));
        out += buf;
        break;
      case 'f':
      case 'F':
      case 'e':
      case 'g':
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v.as_double());
        out += buf;
        break;
      case 'x':
        std::snprintf(buf, sizeof buf, (spec + "llx").c_str(), static_cast<long long>(v.as_int()));
        out += buf;
        break;
      default: raise(std::string("ValueError: unsupported format character '") + conv + "'");
    }
  }
  // Python: leftover arguments are an error unless the single argument looks like a mapping
  // (has __getitem__ and is not a str: dicts, lists, undefined).
  const bool mapping_like = !args.is_tuple() && (args.is_dict() || args.is_list() || args.is_undefined());
  if (next < values.size() && !mapping_like) raise("TypeError: not all arguments converted during string formatting");
  return out;
}

namespace {

Value g_range(Evaluator&, const CallArgs& args) {
  std::vector<int64_t> n;
  for (const auto& v : args.positional) {
    if (!v.is_int() && !v.is_bool()) raise("TypeError: '" + v.type_name() + "' object cannot be interpreted as an integer");
    n.push_back(v.as_int());
  }
  if (n.empty() || n.size() > 3) raise("TypeError: range expected 1 to 3 arguments");
  int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
  if (step == 0) raise("ValueError: range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 100000) raise("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

Dict keywords_dict(const CallArgs& args) {
  Dict d;
  for (const auto& v : args.positional) {
    if (v.is_dict() || v.is_namespace()) {
      for (const auto& [k, x] : v.dict_items().items) d.set(k, x);
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(k, v);
  return d;
}

Value g_namespace(Evaluator&, const CallArgs& args) { return Value::namespace_object(keywords_dict(args)); }
Value g_dict(Evaluator&, const CallArgs& args) { return Value::dict(keywords_dict(args)); }

Value g_raise_exception(Evaluator&, const CallArgs& args) {
  raise("TemplateError: " + arg_or(args, 0, "message", Value("")).to_str());
}

Value g_strftime_now(Evaluator& ev, const CallArgs& args) {
  const Value format_value = arg_or(args, 0, "format", Value(""));
  const std::string format = format_value.to_str();
  std::time_t now = ev.now();
  std::tm tm{};
  localtime_r(&now, &tm);
  // strftime returns 0 both for "too small" and for an empty result: grow a few times.
  for (size_t size = 256; size <= 65536; size *= 4) {
    std::string buf(size, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
    if (n > 0 || format.empty()) return Value(MarkedText(buf.substr(0, n), contains_marks(format_value)));
  }
  return Value("");
}

// joiner(sep=", "): returns "" on the first call and `sep` afterwards.
Value g_joiner(Evaluator&, const CallArgs& args) {
  const Value sep = to_text(arg_or(args, 0, "sep", Value(", ")));
  auto used = std::make_shared<bool>(false);
  return Value::callable("joiner", [sep, used](Evaluator&, const CallArgs&) {
    if (!*used) {
      *used = true;
      return Value("");
    }
    return sep;
  });
}

}  // namespace

void add_globals(Dict& globals) {
  globals.set("joiner", Value::callable("joiner", g_joiner));
  globals.set("range", Value::callable("range", g_range));
  globals.set("namespace", Value::callable("namespace", g_namespace));
  globals.set("dict", Value::callable("dict", g_dict));
  globals.set("raise_exception", Value::callable("raise_exception", g_raise_exception));
  globals.set("strftime_now", Value::callable("strftime_now", g_strftime_now));
}

}  // namespace lemma::jinja
