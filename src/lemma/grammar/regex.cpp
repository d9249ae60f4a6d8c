#include "lemma/grammar/regex.h"

#include <string>

#include "lemma/base/error.h"

namespace lemma::grammar {

namespace {

CharClass digit_class() { return CharClass::range('0', '9'); }
CharClass word_class() {
  CharClass c = CharClass::range('a', 'z');
  c.add('A', 'Z');
  c.add('0', '9');
  c.add('_', '_');
  return c;
}
CharClass space_class() {
  CharClass c;
  for (uint32_t x : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu,
                     0x3000u, 0xFEFFu})
    c.add(x, x);
  c.add(0x2000, 0x200A);
  return c;
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, const CharExpr& char_expr) : char_expr_(char_expr) {
    // Decode the pattern's UTF-8 into code points.
    for (size_t i = 0; i < pattern.size();) {
      const auto b = static_cast<unsigned char>(pattern[i]);
      uint32_t c = b;
      size_t n = 1;
      if (b >= 0xF0) { c = b & 0x07; n = 4; }
      else if (b >= 0xE0) { c = b & 0x0F; n = 3; }
      else if (b >= 0xC0) { c = b & 0x1F; n = 2; }
      for (size_t k = 1; k < n && i + k < pattern.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(pattern[i + k]) & 0x3F);
      cps_.push_back(c);
      i += n;
    }
    pattern_ = std::string(pattern);
  }

  ExprPtr parse(bool search) {
    std::vector<ExprPtr> branches;
    const ExprPtr any = star(char_expr_(CharClass::any()));
    while (true) {
      bool anchored_start = false, anchored_end = false;
      if (peek('^')) { ++pos_; anchored_start = true; }
      std::vector<ExprPtr> items;
      parse_concat(items, /*top=*/true, anchored_end);
      std::vector<ExprPtr> branch;
      if (search && !anchored_start) branch.push_back(any);
      branch.push_back(seq(std::move(items)));
      if (search && !anchored_end) branch.push_back(any);
      branches.push_back(seq(std::move(branch)));
      if (pos_ < cps_.size() && cps_[pos_] == '|') { ++pos_; continue; }
      break;
    }
    if (pos_ != cps_.size()) unsupported("unbalanced ')'");
    return alt(std::move(branches));
  }

 private:
  [[noreturn]] void unsupported(const std::string& what) {
    fail<Unsupported>("pattern '{}': {} is not supported", pattern_, what);
  }
  bool peek(uint32_t c) const { return pos_ < cps_.size() && cps_[pos_] == c; }

  ExprPtr parse_alternation() {
    std::vector<ExprPtr> branches;
    while (true) {
      std::vector<ExprPtr> items;
      bool end_anchor = false;
      parse_concat(items, /*top=*/false, end_anchor);
      branches.push_back(seq(std::move(items)));
      if (peek('|')) { ++pos_; continue; }
      return alt(std::move(branches));
    }
  }

  void parse_concat(std::vector<ExprPtr>& items, bool top, bool& end_anchor) {
    while (pos_ < cps_.size() && cps_[pos_] != '|' && cps_[pos_] != ')') {
      if (cps_[pos_] == '$') {
        ++pos_;
        const bool at_end = pos_ == cps_.size() || cps_[pos_] == '|';
        if (!top || !at_end) unsupported("'$' before the end of the pattern");
        end_anchor = true;
        return;
      }
      if (cps_[pos_] == '^') unsupported("'^' after the start of the pattern");
      ExprPtr atom = parse_atom();
      items.push_back(parse_quantifier(std::move(atom)));
    }
  }

  bool parse_number(int& out) {
    size_t p = pos_;
    if (p >= cps_.size() || cps_[p] < '0' || cps_[p] > '9') return false;
    long v = 0;
    while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
      v = v * 10 + (cps_[p] - '0');
      if (v > 100000) unsupported("a repetition count over 100000");
      ++p;
    }
    out = static_cast<int>(v);
    pos_ = p;
    return true;
  }

  ExprPtr parse_quantifier(ExprPtr atom) {
    while (pos_ < cps_.size()) {
      int min = 0, max = kUnbounded;
      const uint32_t c = cps_[pos_];
      if (c == '?') { min = 0; max = 1; ++pos_; }
      else if (c == '*') { ++pos_; }
      else if (c == '+') { min = 1; ++pos_; }
      else if (c == '{') {
        const size_t save = pos_;
        ++pos_;
        if (!parse_number(min)) { pos_ = save; return atom; }  // a literal '{' (Annex B)
        max = min;
        if (peek(',')) {
          ++pos_;
          if (!parse_number(max)) max = kUnbounded;
        }
        if (!peek('}')) { pos_ = save; return atom; }
        ++pos_;
        if (max != kUnbounded && max < min) unsupported("a repetition {m,n} with n < m");
      } else {
        return atom;
      }
      if (peek('?')) ++pos_;  // lazy: same language
      atom = repeat(std::move(atom), min, max);
    }
    return atom;
  }

  ExprPtr parse_atom() {
    const uint32_t c = cps_[pos_++];
    switch (c) {
      case '(': {
        if (peek('?')) {
          if (pos_ + 1 < cps_.size() && cps_[pos_ + 1] == ':') {
            pos_ += 2;
          } else {
            unsupported("a lookaround or named group '(?'");
          }
        }
        ExprPtr inner = parse_alternation();
        if (!peek(')')) unsupported("an unclosed '('");
        ++pos_;
        return inner;
      }
      case '[': return char_expr_(parse_class());
      case '.': {
        CharClass dot = CharClass::any();
        dot = dot.minus(CharClass::single('\n'));
        dot = dot.minus(CharClass::single('\r'));
        dot = dot.minus(CharClass::range(0x2028, 0x2029));
        return char_expr_(dot);
      }
      case '\\': return char_expr_(parse_escape(/*in_class=*/false));
      case '*': case '+': case '?': unsupported("a quantifier with nothing to repeat");
      default: return char_expr_(CharClass::single(c));
    }
  }

  uint32_t parse_hex(size_t digits) {
    uint32_t v = 0;
    for (size_t i = 0; i < digits; ++i) {
      if (pos_ >= cps_.size()) unsupported("a truncated hex escape");
      const uint32_t d = cps_[pos_++];
      v <<= 4;
      if (d >= '0' && d <= '9') v |= d - '0';
      else if (d >= 'a' && d <= 'f') v |= d - 'a' + 10;
      else if (d >= 'A' && d <= 'F') v |= d - 'A' + 10;
      else unsupported("a bad hex escape");
    }
    return v;
  }

  CharClass parse_escape(bool in_class) {
    if (pos_ >= cps_.size()) unsupported("a trailing '\\'");
    const uint32_t c = cps_[pos_++];
    switch (c) {
      case 'd': return digit_class();
      case 'D': return digit_class().complement();
      case 'w': return word_class();
      case 'W': return word_class().complement();
      case 's': return space_class();
      case 'S': return space_class().complement();
      case 'n': return CharClass::single('\n');
      case 'r': return CharClass::single('\r');
      case 't': return CharClass::single('\t');
      case 'f': return CharClass::single('\f');
      case 'v': return CharClass::single('\v');
      case '0': return CharClass::single(0);
      case 'x': return CharClass::single(parse_hex(2));
      case 'u': {
        const uint32_t v = parse_hex(4);
        if (v >= 0xD800 && v <= 0xDFFF) unsupported("a surrogate \\u escape");
        return CharClass::single(v);
      }
      case 'b':
        if (in_class) return CharClass::single(8);
        unsupported("the word boundary '\\b'");
      case 'B': unsupported("'\\B'");
      case 'p': case 'P': unsupported("Unicode property escapes '\\p'");
      case 'c': unsupported("control escapes '\\c'");
      case 'k': unsupported("named backreferences '\\k'");
      default:
        if (c >= '1' && c <= '9') unsupported("backreferences");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) unsupported(std::string("the escape '\\") + static_cast<char>(c) + "'");
        return CharClass::single(c);
    }
  }

  CharClass parse_class() {
    bool negate = false;
    if (peek('^')) { negate = true; ++pos_; }
    CharClass cls;
    bool first = true;
    while (true) {
      if (pos_ >= cps_.size()) unsupported("an unclosed '['");
      if (cps_[pos_] == ']' && !first) { ++pos_; break; }
      first = false;
      bool single = true;
      uint32_t lo = 0;
      CharClass item;
      if (cps_[pos_] == '\\') {
        ++pos_;
        item = parse_escape(/*in_class=*/true);
        single = item.ranges().size() == 1 && item.ranges()[0].first == item.ranges()[0].second;
        if (single) lo = item.ranges()[0].first;
      } else {
        lo = cps_[pos_++];
        item = CharClass::single(lo);
      }
      if (single && peek('-') && pos_ + 1 < cps_.size() && cps_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi;
        if (cps_[pos_] == '\\') {
          ++pos_;
          const CharClass h = parse_escape(true);
          if (h.ranges().size() != 1 || h.ranges()[0].first != h.ranges()[0].second) unsupported("a class range ending in a class escape");
          hi = h.ranges()[0].first;
        } else {
          hi = cps_[pos_++];
        }
        if (hi < lo) unsupported("a class range out of order");
        item = CharClass::range(lo, hi);
      }
      cls.add(item);
    }
    return negate ? cls.complement() : cls;
  }

  const CharExpr& char_expr_;
  std::vector<uint32_t> cps_;
  std::string pattern_;
  size_t pos_ = 0;
};

}  // namespace

ExprPtr regex_to_expr(std::string_view pattern, const CharExpr& char_expr, bool search) {
  return RegexParser(pattern, char_expr).parse(search);
}

}  // namespace lemma::grammar
