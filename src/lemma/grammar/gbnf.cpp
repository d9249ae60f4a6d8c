#include "lemma/grammar/gbnf.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lemma/base/error.h"
#include "lemma/grammar/char_class.h"

namespace lemma::grammar {

namespace {

// Larger counts would unroll into graphs too big to be useful for decoding.
constexpr int kMaxRepetition = 10000;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Grammar parse() {
    skip_space(/*newlines=*/true);
    while (!at_end()) {
      parse_rule();
      skip_space(/*newlines=*/true);
    }
    for (const auto& [name, id] : rules_) {
      if (!builder_.is_defined(id))
        fail_at(first_use_.at(id), "rule '{}' is referenced but never defined", name);
    }
    check_left_recursion();
    const auto root = rules_.find("root");
    if (root == rules_.end()) fail<InvalidArgument>("GBNF: no rule named 'root' (the start rule)");
    return builder_.build(root->second);
  }

 private:
  // --- positions and errors ---
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  // "line L, column C" (1-based, columns in characters) of a byte offset.
  std::string location(size_t offset) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') { ++line; column = 1; }
      else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) { ++column; }
    }
    return fmt::format("line {}, column {}", line, column);
  }
  template <typename... Args>
  [[noreturn]] void fail_at(size_t offset, fmt::format_string<Args...> format, Args&&... args) const {
    fail<InvalidArgument>("GBNF {}: {}", location(offset), fmt::format(format, std::forward<Args>(args)...));
  }
  // What is at the current position, for "expected X, got Y".
  std::string got() const {
    if (at_end()) return "end of input";
    if (peek() == '\n' || peek() == '\r') return "end of line";
    size_t n = 1;
    while (pos_ + n < text_.size() && (static_cast<unsigned char>(text_[pos_ + n]) & 0xC0) == 0x80) ++n;
    return "'" + std::string(text_.substr(pos_, n)) + "'";
  }
  [[noreturn]] void expected(std::string_view what) const { fail_at(pos_, "expected {}, got {}", what, got()); }

  // Spaces, tabs and comments; newlines too where the syntax lets an expression go on.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t') ++pos_;
      else if (c == '#') while (!at_end() && peek() != '\n') ++pos_;
      else if (newlines && (c == '\n' || c == '\r')) ++pos_;
      else if (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ++pos_;  // CRLF: stop at '\n'
      else break;
    }
  }

  // --- rules ---
  int rule_id(const std::string& name, size_t offset) {
    auto [it, inserted] = rules_.try_emplace(name, -1);
    if (inserted) {
      it->second = builder_.declare(name);
      first_use_[it->second] = offset;
    }
    return it->second;
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    if (name.empty()) expected("a rule name");
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") expected("'::=' after the rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const int id = rule_id(name, start);
    if (builder_.is_defined(id)) fail_at(start, "rule '{}' is defined twice", name);
    ExprPtr body = parse_alternatives(/*nested=*/false);
    if (bodies_.size() <= static_cast<size_t>(id)) bodies_.resize(static_cast<size_t>(id) + 1);
    bodies_[static_cast<size_t>(id)] = body;
    definitions_[id] = start;
    builder_.define(id, std::move(body));
    if (!at_end() && peek() != '\n' && peek() != '\r') expected("a rule element, '|' or the end of the line");
  }

  // --- left recursion: refused here with the rule's name and place (the recognizer would only
  // find it when decoding reaches it) ---
  bool nullable(const Expr& e, const std::vector<bool>& rule_nullable) const {
    switch (e.kind) {
      case Expr::Kind::kBytes: case Expr::Kind::kToken: return false;
      case Expr::Kind::kRequire: return true;
      case Expr::Kind::kAutomaton: return e.automaton->accepting[0];
      case Expr::Kind::kRule: return rule_nullable[static_cast<size_t>(e.rule)];
      case Expr::Kind::kRepeat: return e.min == 0 || nullable(*e.items[0], rule_nullable);
      case Expr::Kind::kAlt:
        for (const ExprPtr& i : e.items) if (nullable(*i, rule_nullable)) return true;
        return false;
      case Expr::Kind::kSeq:
        for (const ExprPtr& i : e.items) if (!nullable(*i, rule_nullable)) return false;
        return true;
    }
    return false;
  }
  // The rules `e` may call before reading a byte.
  void leading_calls(const Expr& e, const std::vector<bool>& rule_nullable, std::vector<int>& out) const {
    if (e.kind == Expr::Kind::kRule) out.push_back(e.rule);
    if (e.kind == Expr::Kind::kRepeat && e.max != 0) leading_calls(*e.items[0], rule_nullable, out);
    if (e.kind == Expr::Kind::kAlt) for (const ExprPtr& i : e.items) leading_calls(*i, rule_nullable, out);
    if (e.kind == Expr::Kind::kSeq) {
      for (const ExprPtr& i : e.items) {
        leading_calls(*i, rule_nullable, out);
        if (!nullable(*i, rule_nullable)) break;
      }
    }
  }
  void check_left_recursion() const {
    const size_t n = bodies_.size();
    std::vector<bool> rule_nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (!rule_nullable[r] && nullable(*bodies_[r], rule_nullable)) rule_nullable[r] = changed = true;
      }
    }
    std::vector<std::vector<int>> calls(n);
    for (size_t r = 0; r < n; ++r) leading_calls(*bodies_[r], rule_nullable, calls[r]);
    std::vector<int> color(n, 0);  // 0 unvisited, 1 on the path, 2 done
    std::vector<int> path;
    const auto visit = [&](const auto& self, int r) -> void {
      color[static_cast<size_t>(r)] = 1;
      path.push_back(r);
      for (int c : calls[static_cast<size_t>(r)]) {
        if (color[static_cast<size_t>(c)] == 1) {
          std::string cycle;
          for (auto it = std::find(path.begin(), path.end(), c); it != path.end(); ++it) cycle += rule_name(*it) + " -> ";
          fail_at(definitions_.at(c), "rule '{}' is left-recursive ({}{}): the recognizer reads left to right, "
                  "write the repetition with * or +", rule_name(c), cycle, rule_name(c));
        }
        if (color[static_cast<size_t>(c)] == 0) self(self, c);
      }
      path.pop_back();
      color[static_cast<size_t>(r)] = 2;
    };
    for (size_t r = 0; r < n; ++r) if (color[r] == 0) visit(visit, static_cast<int>(r));
  }
  std::string rule_name(int id) const {
    for (const auto& [name, r] : rules_) if (r == id) return name;
    return "?";
  }

  // --- expressions ---
  ExprPtr parse_alternatives(bool nested) {
    std::vector<ExprPtr> branches;
    while (true) {
      branches.push_back(parse_sequence(nested));
      if (!nested) {
        // A rule may go on with '|' at the start of the next line (a new rule cannot start so).
        const size_t save = pos_;
        skip_space(true);
        if (peek() != '|') pos_ = save;
      }
      if (peek() != '|') return alt(std::move(branches));
      ++pos_;
      skip_space(true);
    }
  }

  ExprPtr parse_sequence(bool nested) {
    std::vector<ExprPtr> items;
    while (true) {
      ExprPtr item;
      const char c = peek();
      if (c == '"') item = parse_literal();
      else if (c == '[') item = parse_class();
      else if (c == '.') { ++pos_; item = utf8_expr(CharClass::any()); }
      else if (c == '(') item = parse_group();
      else if (c == '<' || c == '!') item = parse_token();
      else if (is_name_char(c)) {
        const size_t start = pos_;
        const std::string name = parse_name();
        item = rule_ref(rule_id(name, start));
      } else {
        return seq(std::move(items));
      }
      skip_space(nested);
      while (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') {
        item = parse_quantifier(std::move(item));
        skip_space(nested);
      }
      items.push_back(std::move(item));
    }
  }

  ExprPtr parse_group() {
    const size_t open = pos_++;
    skip_space(true);
    ExprPtr inner = parse_alternatives(/*nested=*/true);
    if (peek() != ')') expected("')' to close the '(' at " + location(open));
    ++pos_;
    return inner;
  }

  // `<[id]>`, `<text>` (the token whose text that is, `<` and `>` included; resolved against the
  // vocabulary later), and either after `!`: any one text token but that one.
  ExprPtr parse_token() {
    const size_t start = pos_;
    const bool negated = peek() == '!';
    if (negated) {
      ++pos_;
      if (peek() != '<') expected("'<' after '!' (a token reference: !<[id]> or !<text>)");
    }
    if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '[') {
      pos_ += 2;
      const size_t digits = pos_;
      int64_t id = 0;
      while (peek() >= '0' && peek() <= '9') {
        id = id * 10 + (peek() - '0');
        if (id > INT32_MAX) fail_at(digits, "token id too large");
        ++pos_;
      }
      if (pos_ == digits) expected("a token id (digits) in '<[id]>'");
      if (text_.substr(pos_, 2) != "]>") expected("']>' to end the token reference at " + location(start));
      pos_ += 2;
      return token_ref(static_cast<int32_t>(id), negated);
    }
    const size_t open = pos_;
    size_t end = open + 1;
    while (end < text_.size() && text_[end] != '>' && text_[end] != '\n' && text_[end] != '\r') ++end;
    if (end >= text_.size() || text_[end] != '>') {
      pos_ = end;
      expected("'>' to close the token at " + location(start));
    }
    if (end == open + 1) fail_at(start, "empty token reference '<>'");
    pos_ = end + 1;
    return token_named(std::string(text_.substr(open, end + 1 - open)), negated);
  }

  ExprPtr parse_quantifier(ExprPtr item) {
    const char c = text_[pos_++];
    if (c == '*') return star(std::move(item));
    if (c == '+') return plus(std::move(item));
    if (c == '?') return optional(std::move(item));
    // {m} {m,} {m,n} {,n}
    skip_space(true);
    int min = 0, max = kUnbounded;
    const bool has_min = parse_count(min);
    skip_space(true);
    if (peek() == ',') {
      ++pos_;
      skip_space(true);
      if (!parse_count(max)) max = kUnbounded;
      skip_space(true);
    } else if (has_min) {
      max = min;
    } else {
      expected("a repetition count");
    }
    if (peek() != '}') expected("'}' to end the repetition");
    ++pos_;
    if (max != kUnbounded && max < min) fail_at(pos_ - 1, "repetition {{{},{}}} has its maximum below its minimum", min, max);
    return repeat(std::move(item), min, max);
  }

  bool parse_count(int& out) {
    if (peek() < '0' || peek() > '9') return false;
    const size_t start = pos_;
    long v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepetition) fail_at(start, "a repetition count over {} is not supported", kMaxRepetition);
      ++pos_;
    }
    out = static_cast<int>(v);
    return true;
  }

  ExprPtr parse_literal() {
    const size_t open = pos_++;
    std::string bytes;
    while (peek() != '"') {
      if (at_end() || peek() == '\n' || peek() == '\r') expected("'\"' to close the string at " + location(open));
      bytes += utf8_encode(parse_char());
    }
    ++pos_;
    return literal(bytes);
  }

  ExprPtr parse_class() {
    const size_t open = pos_++;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CharClass cls;
    while (peek() != ']') {
      if (at_end() || peek() == '\n' || peek() == '\r') expected("']' to close the character class at " + location(open));
      const size_t start = pos_;
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail_at(start, "character range with its end below its start");
      }
      cls.add(lo, hi);
    }
    ++pos_;
    return utf8_expr(negated ? cls.complement() : cls);
  }

  // One character of a literal or class: an escape, or one UTF-8 encoded code point.
  uint32_t parse_char() {
    const size_t start = pos_;
    if (peek() != '\\') return parse_utf8();
    ++pos_;
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case '\\': case '"': case '[': case ']': case '-': case '^': return static_cast<unsigned char>(c);
      case 'x': return parse_hex(2, start);
      case 'u': return parse_hex(4, start);
      case 'U': return parse_hex(8, start);
      default:
        pos_ = start + 1;
        expected("an escape (\\n \\t \\r \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)");
    }
  }

  uint32_t parse_hex(int digits, size_t start) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else expected(std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) fail_at(start, "U+{:X} is not a Unicode scalar value", v);
    return v;
  }

  uint32_t parse_utf8() {
    const auto b = static_cast<unsigned char>(peek());
    size_t n = 1;
    uint32_t c = b;
    if (b >= 0xF0 && b < 0xF8) { n = 4; c = b & 0x07; }
    else if (b >= 0xE0) { n = 3; c = b & 0x0F; }
    else if (b >= 0xC0) { n = 2; c = b & 0x1F; }
    else if (b >= 0x80) fail_at(pos_, "invalid UTF-8");
    if (b >= 0xF8) fail_at(pos_, "invalid UTF-8");
    for (size_t k = 1; k < n; ++k) {
      if (pos_ + k >= text_.size() || (static_cast<unsigned char>(text_[pos_ + k]) & 0xC0) != 0x80)
        fail_at(pos_, "invalid UTF-8");
      c = (c << 6) | (static_cast<unsigned char>(text_[pos_ + k]) & 0x3F);
    }
    pos_ += n;
    return c;
  }

  std::string_view text_;
  size_t pos_ = 0;
  GrammarBuilder builder_;
  std::map<std::string, int> rules_;  // name -> declared rule
  std::map<int, size_t> first_use_;   // rule -> offset of its first mention, for "never defined"
  std::map<int, size_t> definitions_;  // rule -> offset of its definition
  std::vector<ExprPtr> bodies_;        // by rule id, for the left-recursion check
};

}  // namespace

Grammar gbnf_grammar(std::string_view text) { return GbnfParser(text).parse(); }

}  // namespace lemma::grammar
