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

std::string format_with_spec(const Value& v, const std::string& spec) {
  if (spec.empty()) return v.to_str();
  size_t i = 0;
  char fill = ' ', align = '\0', sign = '-', type = '\0', grouping = '\0';
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (spec.size() >= 2 && is_align(spec[1])) {
    fill = spec[0];
    align = spec[1];
    i = 2;
  } else if (is_align(spec[0])) {
    align = spec[0];
    i = 1;
  }
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
  bool alternate = false;
  if (i < spec.size() && spec[i] == '#') {
    alternate = true;
    ++i;
  }
  if (i < spec.size() && spec[i] == '0') {
    if (!align) {
      fill = '0';
      align = '=';
    }
    ++i;
  }
  size_t width = 0, precision = std::string::npos;
  while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) width = width * 10 + static_cast<size_t>(spec[i++] - '0');
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) grouping = spec[i++];
  if (i < spec.size() && spec[i] == '.') {
    precision = 0;
    ++i;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) precision = precision * 10 + static_cast<size_t>(spec[i++] - '0');
  }
  if (i < spec.size()) type = spec[i++];
  if (i != spec.size() || width > 4096 || (precision != std::string::npos && precision > 4096)) {
    raise("ValueError: Invalid format specifier '" + spec + "'");
  }
  std::string body, prefix;  // prefix: sign (and 0x-style base marker)
  bool numeric = true;
  if (v.is_string() || ((v.is_undefined() || v.is_none() || v.is_listlike() || v.is_dict()) && type != 'd')) {
    if (type && type != 's') raise(std::string("ValueError: Unknown format code '") + type + "' for object of type '" + v.type_name() + "'");
    numeric = false;
    std::u32string s = utf8_decode(v.to_str());
    if (precision != std::string::npos && precision < s.size()) s.resize(precision);
    body = utf8_encode(s);
    if (!align) align = '<';
  } else {
    const bool as_int = (v.is_int() || v.is_bool()) && (type == '\0' || type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b' || type == 'c');
    if (v.is_bool() && type == '\0') {
      numeric = false;
      body = v.to_str();
    } else if (as_int) {
      int64_t n = v.as_int();
      uint64_t mag = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
      if (n < 0) prefix = "-";
      else if (sign != '-') prefix = std::string(1, sign);
      int base = type == 'x' || type == 'X' ? 16 : type == 'o' ? 8 : type == 'b' ? 2 : 10;
      if (type == 'c') {
        body = utf8_encode(std::u32string(1, static_cast<char32_t>(mag)));
        prefix.clear();
      } else {
        do {
          int d = static_cast<int>(mag % static_cast<uint64_t>(base));
          body.insert(body.begin(), static_cast<char>(d < 10 ? '0' + d : (type == 'X' ? 'A' : 'a') + d - 10));
          mag /= static_cast<uint64_t>(base);
        } while (mag);
        if (alternate && base != 10) prefix += base == 16 ? (type == 'X' ? "0X" : "0x") : base == 8 ? "0o" : "0b";
      }
    } else {
      if (!v.is_number()) raise(std::string("ValueError: Unknown format code '") + type + "' for object of type '" + v.type_name() + "'");
      double d = v.as_double();
      if (std::signbit(d) && !std::isnan(d)) prefix = "-";
      else if (sign != '-') prefix = std::string(1, sign);
      d = std::fabs(d);
      char buf[4200];
      if (type == '\0' && precision == std::string::npos) {
        body = float_repr(d);
      } else {
        char conv = type == '\0' ? 'g' : type == '%' ? 'f' : type;
        if (std::string("fFeEgG").find(conv) == std::string::npos) {
          raise(std::string("ValueError: Unknown format code '") + type + "' for object of type 'float'");
        }
        const int prec = precision == std::string::npos ? 6 : static_cast<int>(precision);
        std::snprintf(buf, sizeof buf, (std::string("%") + (alternate ? "#" : "") + ".*" + conv).c_str(), prec, type == '%' ? d * 100 : d);
        body = buf;
        if (type == '%') body += '%';
      }
    }
    if (grouping && !body.empty()) {
      size_t end = body.find_first_not_of("0123456789");
      if (end == std::string::npos) end = body.size();
      for (size_t k = end; k > 3; k -= 3) body.insert(k - 3, 1, grouping);
    }
    if (!align) align = '>';
  }
  std::u32string text = utf8_decode(prefix + body);
  if (text.size() >= width) return prefix + body;
  const size_t pad = width - text.size();
  const std::string f = utf8_encode(std::u32string(1, static_cast<char32_t>(static_cast<unsigned char>(fill))));
  auto repeat = [&](size_t n) {
    std::string s;
    for (size_t k = 0; k < n; ++k) s += f;
    return s;
  };
  switch (align) {
    case '<': return prefix + body + repeat(pad);
    case '^': return repeat(pad / 2) + prefix + body + repeat(pad - pad / 2);
    case '=': return numeric ? prefix + repeat(pad) + body : repeat(pad) + prefix + body;
    default: return repeat(pad) + prefix + body;
  }
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
