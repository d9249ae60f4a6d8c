#include "lemma/grammar/json_text.h"

#include <cmath>

#include "lemma/base/error.h"

namespace lemma::grammar {

namespace {

ExprPtr digit() { return byte_range('0', '9'); }
ExprPtr hex_digit() {
  std::bitset<256> s;
  for (int c = '0'; c <= '9'; ++c) s.set(static_cast<size_t>(c));
  for (int c = 'a'; c <= 'f'; ++c) s.set(static_cast<size_t>(c));
  for (int c = 'A'; c <= 'F'; ++c) s.set(static_cast<size_t>(c));
  return bytes(s);
}
ExprPtr either_case_hex(unsigned v) {
  const char* lower = "0123456789abcdef";
  const char* upper = "0123456789ABCDEF";
  if (lower[v] == upper[v]) return literal(std::string(1, lower[v]));
  return alt({literal(std::string(1, lower[v])), literal(std::string(1, upper[v]))});
}

// Decimal strings of equal length n with a <= x <= b digit by digit (leading zeros allowed here).
ExprPtr digits_between(const std::string& a, const std::string& b) {
  if (a.empty()) return empty();
  const std::string ra = a.substr(1), rb = b.substr(1);
  const bool low_free = ra.find_first_not_of('0') == std::string::npos;
  const bool high_free = rb.find_first_not_of('9') == std::string::npos;
  if (a[0] == b[0]) return seq({literal(std::string(1, a[0])), digits_between(ra, rb)});
  if (low_free && high_free) {
    return seq({byte_range(static_cast<unsigned char>(a[0]), static_cast<unsigned char>(b[0])), repeat(digit(), static_cast<int>(ra.size()), static_cast<int>(ra.size()))});
  }
  std::vector<ExprPtr> branches;
  branches.push_back(seq({literal(std::string(1, a[0])), digits_between(ra, std::string(ra.size(), '9'))}));
  if (a[0] + 1 <= b[0] - 1) {
    branches.push_back(seq({byte_range(static_cast<unsigned char>(a[0] + 1), static_cast<unsigned char>(b[0] - 1)),
                            repeat(digit(), static_cast<int>(ra.size()), static_cast<int>(ra.size()))}));
  }
  branches.push_back(seq({literal(std::string(1, b[0])), digits_between(std::string(rb.size(), '0'), rb)}));
  return alt(std::move(branches));
}

// Non-negative integers without leading zeros in [lo, hi] (hi absent: no upper bound).
ExprPtr non_negative_range(uint64_t lo, std::optional<uint64_t> hi) {
  if (hi && *hi < lo) return nothing();
  const std::string los = std::to_string(lo);
  const size_t max_len = hi ? std::to_string(*hi).size() : los.size();
  std::vector<ExprPtr> branches;
  for (size_t len = los.size(); len <= max_len; ++len) {
    const std::string low = len == los.size() ? los : "1" + std::string(len - 1, '0');
    const std::string high = hi && len == max_len ? std::to_string(*hi) : std::string(len, '9');
    if (low.size() == high.size() && low <= high) branches.push_back(digits_between(low, high));
  }
  if (!hi) branches.push_back(seq({byte_range('1', '9'), repeat(digit(), static_cast<int>(los.size()), kUnbounded)}));
  return alt(std::move(branches));
}

}  // namespace

ExprPtr json_char_expr(const CharClass& cls) {
  CharClass raw = cls.intersect(CharClass::range(0x20, kMaxCodePoint));
  raw = raw.minus(CharClass::single('"')).minus(CharClass::single('\\'));
  std::vector<ExprPtr> forms{utf8_expr(raw)};
  if (cls.contains('"')) forms.push_back(literal("\\\""));
  if (cls.contains('\\')) forms.push_back(literal("\\\\"));
  if (cls.contains('/')) forms.push_back(literal("\\/"));
  static const char* kShort[] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 "\\b", "\\t", "\\n", nullptr, "\\f", "\\r"};
  for (unsigned c = 0; c < 0x20; ++c) {
    if (!cls.contains(c)) continue;
    if (c < 14 && kShort[c]) forms.push_back(literal(kShort[c]));
    forms.push_back(seq({literal("\\u00"), literal(std::string(1, static_cast<char>('0' + (c >> 4)))), either_case_hex(c & 15)}));
  }
  return alt(std::move(forms));
}

ExprPtr json_any_char_expr() {
  CharClass raw = CharClass::range(0x20, kMaxCodePoint).minus(CharClass::single('"')).minus(CharClass::single('\\'));
  std::bitset<256> short_escapes;
  for (char c : std::string("\"\\/bfnrt")) short_escapes.set(static_cast<unsigned char>(c));
  return alt({utf8_expr(raw), seq({literal("\\"), bytes(short_escapes)}),
              seq({literal("\\u"), repeat(hex_digit(), 4, 4)})});
}

ExprPtr integer_range_expr(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<ExprPtr> branches;
  if (!lo || *lo < 0) {
    // x < 0 and lo <= x <= hi  <=>  max(1, -hi) <= |x| <= -lo
    const uint64_t abs_lo = hi && *hi < 0 ? static_cast<uint64_t>(-(*hi + 1)) + 1 : 1;
    std::optional<uint64_t> abs_hi;
    if (lo) abs_hi = static_cast<uint64_t>(-(*lo + 1)) + 1;
    branches.push_back(seq({literal("-"), non_negative_range(abs_lo, abs_hi)}));
  }
  if (!hi || *hi >= 0) {
    const uint64_t from = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
    std::optional<uint64_t> to;
    if (hi) to = static_cast<uint64_t>(*hi);
    branches.push_back(non_negative_range(from, to));
  }
  return alt(std::move(branches));
}

namespace {

// m = I + f (I a non-negative integer without leading zeros, f its fraction) within the bounds.
ExprPtr magnitude_expr(std::optional<NumberBound> lower, std::optional<NumberBound> upper) {
  const ExprPtr any_fraction = optional(seq({literal("."), plus(digit())}));
  const ExprPtr zero_fraction = optional(seq({literal("."), plus(literal("0"))}));
  const ExprPtr nonzero_fraction = seq({literal("."), star(digit()), byte_range('1', '9'), star(digit())});
  if (upper && upper->value < 0) return nothing();
  std::vector<ExprPtr> branches;
  // I in [from, to]: every fraction keeps m inside.
  int64_t from = 0;
  if (lower && lower->value >= 0) from = lower->exclusive ? lower->value + 1 : lower->value;
  std::optional<uint64_t> to;
  if (upper) to = static_cast<uint64_t>(upper->value) - 1;
  if (!upper || upper->value >= 1) branches.push_back(seq({non_negative_range(static_cast<uint64_t>(from), to), any_fraction}));
  // Just above an exclusive lower bound: I = bound with a fraction that is not zero.
  if (lower && lower->exclusive && lower->value >= 0 && (!upper || upper->value >= lower->value + 1)) {
    branches.push_back(seq({literal(std::to_string(lower->value)), nonzero_fraction}));
  }
  // Exactly an inclusive upper bound.
  if (upper && !upper->exclusive &&
      (!lower || lower->value < upper->value || (lower->value == upper->value && !lower->exclusive))) {
    branches.push_back(seq({literal(std::to_string(upper->value)), zero_fraction}));
  }
  return alt(std::move(branches));
}

}  // namespace

ExprPtr bounded_number_expr(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  // v = m for the plain form; v = -m for the "-" form, so v >= lo <=> m <= -lo and v <= hi <=> m >= -hi.
  std::optional<NumberBound> neg_lower, neg_upper;
  if (hi) neg_lower = NumberBound{-hi->value, hi->exclusive};
  if (lo) neg_upper = NumberBound{-lo->value, lo->exclusive};
  return alt({magnitude_expr(lo, hi), seq({literal("-"), magnitude_expr(neg_lower, neg_upper)})});
}

ExprPtr number_expr(bool non_negative) {
  const ExprPtr digits = plus(digit());
  const ExprPtr int_part = alt({literal("0"), seq({byte_range('1', '9'), star(digit())})});
  const ExprPtr frac = optional(seq({literal("."), digits}));
  std::bitset<256> e, sign;
  e.set('e');
  e.set('E');
  sign.set('+');
  sign.set('-');
  const ExprPtr exp = optional(seq({bytes(e), optional(bytes(sign)), digits}));
  std::vector<ExprPtr> parts;
  if (!non_negative) parts.push_back(optional(literal("-")));
  parts.insert(parts.end(), {int_part, frac, exp});
  return seq(std::move(parts));
}

namespace {

std::bitset<256> ascii_set(std::string_view chars, bool alnum) {
  std::bitset<256> s;
  for (char c : chars) s.set(static_cast<unsigned char>(c));
  if (alnum) {
    for (int c = 'a'; c <= 'z'; ++c) s.set(static_cast<size_t>(c));
    for (int c = 'A'; c <= 'Z'; ++c) s.set(static_cast<size_t>(c));
    for (int c = '0'; c <= '9'; ++c) s.set(static_cast<size_t>(c));
  }
  return s;
}

// RFC 3986 URI (or URI-reference), hosts as reg-name (IP literals in brackets are refused).
ExprPtr uri_expr(bool reference) {
  const std::string unreserved_sub = "-._~!$&'()*+,;=";
  const ExprPtr pct = seq({literal("%"), hex_digit(), hex_digit()});
  auto chars = [&](std::string_view extra) { return alt({bytes(ascii_set(unreserved_sub + std::string(extra), true)), pct}); };
  const ExprPtr pchar = chars(":@");
  const ExprPtr segment = star(pchar), segment_nz = plus(pchar);
  const ExprPtr path_abempty = star(seq({literal("/"), segment}));
  const ExprPtr path_absolute = seq({literal("/"), optional(seq({segment_nz, path_abempty}))});
  const ExprPtr authority = seq({optional(seq({star(chars(":")), literal("@")})), star(chars("")),
                                 optional(seq({literal(":"), star(digit())}))});
  const ExprPtr tail = seq({optional(seq({literal("?"), star(chars(":@/?"))})), optional(seq({literal("#"), star(chars(":@/?"))}))});
  std::bitset<256> alpha = ascii_set("", true);
  for (int c = '0'; c <= '9'; ++c) alpha.reset(static_cast<size_t>(c));
  const ExprPtr scheme = seq({bytes(alpha), star(bytes(ascii_set("+-.", true)))});
  const ExprPtr hier = alt({seq({literal("//"), authority, path_abempty}), path_absolute, seq({segment_nz, path_abempty}), empty()});
  const ExprPtr uri = seq({scheme, literal(":"), hier, tail});
  if (!reference) return uri;
  const ExprPtr segment_nz_nc = plus(chars("@"));
  const ExprPtr relative = alt({seq({literal("//"), authority, path_abempty}), path_absolute, seq({segment_nz_nc, path_abempty}), empty()});
  return alt({uri, seq({relative, tail})});
}

}  // namespace

ExprPtr string_format_expr(const std::string& format) {
  auto lit = [](const char* s) { return literal(s); };
  auto d = [] { return digit(); };
  auto two = [&](char a, char b1, char b2) { return seq({literal(std::string(1, a)), byte_range(static_cast<unsigned char>(b1), static_cast<unsigned char>(b2))}); };
  // Years 0001-9999 (Python's date range); leap years for February 29th.
  const ExprPtr year = alt({seq({byte_range('1', '9'), repeat(d(), 3, 3)}), seq({lit("0"), byte_range('1', '9'), repeat(d(), 2, 2)}),
                            seq({lit("00"), byte_range('1', '9'), d()}), seq({lit("000"), byte_range('1', '9')})});
  const ExprPtr leap_year = alt({
      seq({d(), d(), alt({two('0', '4', '4'), two('0', '8', '8'), seq({byte_range('2', '2'), alt({lit("0"), lit("4"), lit("8")})}),
                          seq({alt({lit("4"), lit("6"), lit("8")}), alt({lit("0"), lit("4"), lit("8")})}),
                          seq({alt({lit("1"), lit("3"), lit("5"), lit("7"), lit("9")}), alt({lit("2"), lit("6")})})})}),
      seq({alt({lit("04"), lit("08"), seq({alt({lit("2"), lit("4"), lit("6"), lit("8")}), alt({lit("0"), lit("4"), lit("8")})}),
                seq({alt({lit("1"), lit("3"), lit("5"), lit("7"), lit("9")}), alt({lit("2"), lit("6")})})}),
           lit("00")})});
  const ExprPtr month_day = alt({
      seq({alt({two('0', '1', '9'), two('1', '0', '2')}), lit("-"), alt({two('0', '1', '9'), two('1', '0', '9'), two('2', '0', '8')})}),
      seq({alt({lit("01"), two('0', '3', '9'), two('1', '0', '2')}), lit("-"), alt({lit("29"), lit("30")})}),
      seq({alt({lit("01"), lit("03"), lit("05"), lit("07"), lit("08"), lit("10"), lit("12")}), lit("-31")})});
  const ExprPtr date = alt({seq({year, lit("-"), month_day}), seq({leap_year, lit("-02-29")})});
  const ExprPtr hour = alt({seq({byte_range('0', '1'), d()}), two('2', '0', '3')});
  const ExprPtr minute = seq({byte_range('0', '5'), d()});
  const ExprPtr time = seq({hour, lit(":"), minute, lit(":"), minute, optional(seq({lit("."), plus(d())})),
                            alt({lit("Z"), seq({alt({lit("+"), lit("-")}), hour, lit(":"), minute})})});
  if (format == "date") return date;
  if (format == "time") return time;
  if (format == "date-time") return seq({date, lit("T"), time});
  if (format == "uuid") {
    auto hex = [](int n) { return repeat(hex_digit(), n, n); };
    return seq({hex(8), lit("-"), hex(4), lit("-"), hex(4), lit("-"), hex(4), lit("-"), hex(12)});
  }
  if (format == "uri" || format == "uri-reference") return uri_expr(format == "uri-reference");
  fail<Unsupported>("JSON Schema: format '{}' is not supported", format);
}

std::string json_quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

ExprPtr json_value_literal(const nlohmann::ordered_json& value, const JsonPunctuation& p) {
  if (value.is_string()) return literal(json_quote(value.get<std::string>()));
  if (value.is_array()) {
    std::vector<ExprPtr> items{literal("["), p.ws};
    for (size_t i = 0; i < value.size(); ++i) {
      if (i) items.push_back(p.comma);
      items.push_back(json_value_literal(value[i], p));
    }
    items.insert(items.end(), {p.ws, literal("]")});
    return seq(std::move(items));
  }
  if (value.is_object()) {
    std::vector<ExprPtr> items{literal("{"), p.ws};
    bool first = true;
    for (const auto& [k, v] : value.items()) {
      if (!first) items.push_back(p.comma);
      first = false;
      items.insert(items.end(), {literal(json_quote(k)), p.colon, json_value_literal(v, p)});
    }
    items.insert(items.end(), {p.ws, literal("}")});
    return seq(std::move(items));
  }
  if (value.is_number_float()) {
    // JSON Schema compares numbers by value: 2.0 in a schema is also the instance 2. The integer
    // and the ".0" spelling are both accepted (others, e.g. 20e-1, are refused: stricter). An
    // integer value keeps its one spelling: whether 2.0 is an integer depends on the draft.
    const double d = value.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d)) && d > -1e15 && d < 1e15 && !(d == 0 && std::signbit(d))) {
      const std::string whole = std::to_string(static_cast<int64_t>(d));
      return alt({literal(whole), literal(whole + ".0")});
    }
  }
  return literal(value.dump());
}

}  // namespace lemma::grammar
