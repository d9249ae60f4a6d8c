// Request marks through the interpreter: strings from the request (messages, tools) carry the
// byte ranges they own, and every operation that builds a string keeps them, so the renderer can
// tell the template's own text from request text (ChatTemplate::render_spans). Builtins are
// either precise (they place marks exactly: concatenation, slicing, strip, split, replace, join,
// case mapping, escaping) or derived (their whole result is marked when any input holds a mark);
// a builtin that does not say is derived, so a new one cannot launder request text.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lemma/tokenizer/jinja/value.h"

namespace lemma::jinja {

// Whether `v` holds request bytes: a string's marks or any string (key or value) inside it.
bool contains_marks(const Value& v);
// Whether any argument holds request bytes.
bool contains_marks(const CallArgs& args);
// `v` with every string in it wholly marked (containers are copied; other values unchanged).
Value mark_all(const Value& v);

// Appends str(v): a string with its own marks; any other value's text wholly marked when the
// value contains marks (the repr of a list prints its strings).
void append_value(MarkedText& out, const Value& v);

// str(v) as a string value with its marks (a string itself; any other value via append_value).
Value to_text(const Value& v);

// How a builtin treats marks (see the file comment).
enum class MarkPolicy {
  kHandled,      // the result holds given values, non-text, or strings the builtin marked exactly
  kFromSubject,  // the builtin marks its result from the subject's marks; a marked argument marks it all
  kDerived,      // the whole result is marked when the subject or an argument has marks
};
Value apply_mark_policy(MarkPolicy policy, Value result, const Value& subject, const CallArgs& args);

// A string's code points and the byte offset of each (offsets.back() == size). `exact` is false
// when the bytes are not valid UTF-8, so that code point slices would not be byte slices.
struct CodePoints {
  explicit CodePoints(const std::string& s);
  std::u32string cps;
  std::vector<size_t> offsets;
  bool exact = true;
};

// Code points [i, j) of string `s` (whose code points are `cp`), with their marks.
Value code_point_slice(const Value& s, const CodePoints& cp, size_t i, size_t j);
// Bytes [begin, end) of string `s`, with their marks.
Value byte_slice(const Value& s, size_t begin, size_t end);
// f applied to each run of equally marked bytes: for a per-code-point mapping (case, escaping)
// the text equals f(whole) and each output run keeps its input run's mark.
Value map_runs(const Value& s, const std::function<std::string(const std::string&)>& f);

}  // namespace lemma::jinja
