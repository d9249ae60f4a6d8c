// Shared helpers for the builtin filters, tests, methods and globals: argument access and
// Python string primitives.
#pragma once

#include <string>

#include "lemma/tokenizer/jinja/evaluator.h"
#include "lemma/tokenizer/jinja/marks.h"

namespace lemma::jinja {

// Argument `index` / `name`, or `fallback` when not given.
inline Value arg_or(const CallArgs& args, size_t index, const std::string& name, Value fallback) {
  const Value* v = args.get(index, name);
  return v ? *v : std::move(fallback);
}

bool is_py_space(char32_t c);
// Python str.strip/lstrip/rstrip with optional chars (None = whitespace).
std::string py_strip(const std::string& s, const Value& chars, bool left, bool right);
// The same on a string value, keeping the marks of what remains.
Value py_strip(const Value& s, const Value& chars, bool left, bool right);
// Python str.split / str.rsplit (sep None = runs of whitespace); pieces keep their marks.
ValueList py_split(const Value& s, const Value& sep, int64_t maxsplit, bool from_right);
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count);
// The same on a string value: kept text keeps its marks, and a replacement is marked when the
// text it replaces had a marked byte.
Value py_replace(const Value& s, const std::string& old, const Value& repl, int64_t count);
std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_capitalize(const std::string& s);
char32_t cp_upper(char32_t c);
char32_t cp_lower(char32_t c);
// Follows a dotted attribute path ("function.name"; integer parts index lists) as Jinja's
// make_attrgetter does.
Value resolve_attribute(const Value& item, const std::string& path);

}  // namespace lemma::jinja
