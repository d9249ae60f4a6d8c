// Python-compatible text forms: repr(float), repr(str), json.dumps, and UTF-8 code points.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "lemma/tokenizer/jinja/value.h"

namespace lemma::jinja {

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out = "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out = digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp;
  }
  return negative ? "-" + out : out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string string_repr(const std::string& s) {
  char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(quote)) out += std::string("\\") + quote;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + quote;
}

namespace {

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void newline_indent(const JsonStyle& style, int level, std::string& out) {
  if (style.indent < 0) return;
  out += '\n';
  out.append(static_cast<size_t>(style.indent * level), ' ');
}

void json_value(const Value& v, const JsonStyle& style, int level, std::string& out) {
  switch (v.kind()) {
    case Value::Kind::kNone: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: {
      double d = v.as_double();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
      else out += float_repr(d);
      return;
    }
    case Value::Kind::kString: json_string(v.str(), out); return;
    case Value::Kind::kList: {
      const auto& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += style.item_separator;
        newline_indent(style, level + 1, out);
        json_value(items[i], style, level + 1, out);
      }
      newline_indent(style, level, out);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      auto items = v.dict_items().items;
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (style.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return less_than(a.first, b.first); });
      }
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += style.item_separator;
        newline_indent(style, level + 1, out);
        const Value& key = items[i].first;
        if (key.is_string()) json_string(key.str(), out);
        else if (key.is_none()) out += "\"null\"";
        else if (key.is_bool()) out += key.as_bool() ? "\"true\"" : "\"false\"";
        else if (key.is_number()) out += "\"" + key.repr() + "\"";
        else raise("TypeError: keys must be str, int, float, bool or None, not " + key.type_name());
        out += style.key_separator;
        json_value(items[i].second, style, level + 1, out);
      }
      newline_indent(style, level, out);
      out += '}';
      return;
    }
    default: raise("TypeError: Object of type " + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_value(v, style, 0, out);
  return out;
}

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (extra < 0 || i + static_cast<size_t>(extra) >= s.size()) {
      out += static_cast<char32_t>(c);
      ++i;
      continue;
    }
    char32_t cp = extra == 0 ? c : (c & (0x3f >> extra));
    for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out += cp;
    i += static_cast<size_t>(extra) + 1;
  }
  return out;
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  return out;
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

}  // namespace lemma::jinja
