// The lexical pieces of JSON text as grammar expressions: whitespace, strings (free, with a
// length range, or with a regex over their decoded characters), numbers, integer ranges, string
// formats, and exact literals of given values. Shared by the JSON Schema front end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemma/grammar/char_class.h"
#include "lemma/grammar/expr.h"

namespace lemma::grammar {

// One decoded character from `cls`, as it may appear inside a JSON string: raw UTF-8, or escaped
// where JSON requires it ('"', '\\', control characters), plus "\/" for '/'.
ExprPtr json_char_expr(const CharClass& cls);
// Any JSON string character, every escape form included (\uXXXX for any code unit).
ExprPtr json_any_char_expr();
// -?(0|[1-9][0-9]*) restricted to [lo, hi] (either bound may be absent).
ExprPtr integer_range_expr(std::optional<int64_t> lo, std::optional<int64_t> hi);
// A JSON number; non_negative leaves out the minus sign.
ExprPtr number_expr(bool non_negative);
// A JSON number within integer bounds (exclusive or not), written without an exponent.
struct NumberBound {
  int64_t value;
  bool exclusive;
};
ExprPtr bounded_number_expr(std::optional<NumberBound> lo, std::optional<NumberBound> hi);
// The inside of a string (without quotes) in the named format; throws Unsupported for others.
ExprPtr string_format_expr(const std::string& format);
// How a JSON text joins its pieces: whitespace inside brackets, and the item and key separators
// (with any whitespace they allow around them).
struct JsonPunctuation {
  ExprPtr ws, comma, colon;
};
// `value` serialised as Python's json.dumps(ensure_ascii=False) does for strings and numbers, with
// `p` where arrays and objects put whitespace and separators.
ExprPtr json_value_literal(const nlohmann::ordered_json& value, const JsonPunctuation& p);
// Python json.dumps(ensure_ascii=False)'s string form, quotes included.
std::string json_quote(const std::string& s);

}  // namespace lemma::grammar
