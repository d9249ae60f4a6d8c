#include "lemma/tokenizer/jinja/lexer.h"

#include <cctype>
#include <cstring>

#include "lemma/tokenizer/jinja/value.h"

namespace lemma::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string normalize_newlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) { out += utf8_encode(std::u32string(1, cp)); }

// Python's unicode-escape decoding of a string literal body.
std::string decode_string(const std::string& body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    auto hex = [&](size_t digits) -> bool {
      if (i + digits >= body.size()) return false;
      char32_t cp = 0;
      for (size_t k = 1; k <= digits; ++k) {
        char h = body[i + k];
        if (!std::isxdigit(static_cast<unsigned char>(h))) return false;
        cp = cp * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      append_utf8(out, cp);
      i += digits;
      return true;
    };
    switch (e) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x':
        if (!hex(2)) out += "\\x";
        break;
      case 'u':
        if (!hex(4)) out += "\\u";
        break;
      case 'U':
        if (!hex(8)) out += "\\U";
        break;
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k) v = v * 8 + (body[++i] - '0');
          append_utf8(out, static_cast<char32_t>(v));
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string src, const LexOptions& options) : src_(std::move(src)), opt_(options) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t start = find_tag(pos_);
      std::string text = src_.substr(pos_, start - pos_);
      if (start == src_.size()) {
        emit_text(text, line_);
        break;
      }
      char kind = src_[start + 1];
      char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      if (sign != '-' && sign != '+') sign = '\0';
      int text_line = line_;
      line_ += count_newlines(text);
      strip_before_tag(text, sign, kind == '{', line_starting);
      emit_text(text, text_line);
      pos_ = start + 2 + (sign ? 1 : 0);
      if (kind == '%' && lex_raw()) {
        line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
        continue;
      }
      if (kind == '#') {
        lex_comment();
      } else {
        lex_tag(kind == '{');
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back({Token::Type::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  // Whitespace control on the text before a tag: `-` strips all trailing whitespace;
  // lstrip_blocks strips a block/comment tag's indentation when only spaces precede it on its line.
  void strip_before_tag(std::string& text, char sign, bool variable, bool line_starting) const {
    if (sign == '-') {
      size_t end = text.size();
      while (end > 0 && is_space(text[end - 1])) --end;
      text.resize(end);
    } else if (sign != '+' && opt_.lstrip_blocks && !variable) {
      size_t l_pos = text.rfind('\n');
      l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
      if (l_pos > 0 || line_starting) {
        bool all_space = l_pos < text.size();
        for (size_t i = l_pos; i < text.size(); ++i) all_space = all_space && is_space(text[i]);
        if (all_space) text.resize(l_pos);
      }
    }
  }

  // Matches `\s*<word>\s*` at `at`; returns the position after it or npos.
  size_t match_word(size_t at, const char* word) const {
    while (at < src_.size() && is_space(src_[at])) ++at;
    size_t n = std::strlen(word);
    if (src_.compare(at, n, word) != 0) return std::string::npos;
    at += n;
    if (at < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[at])) || src_[at] == '_')) return std::string::npos;
    while (at < src_.size() && is_space(src_[at])) ++at;
    return at;
  }

  // `{% raw %}...{% endraw %}` (pos_ is just after `{%` and its sign): the body is text.
  bool lex_raw() {
    size_t at = match_word(pos_, "raw");
    if (at == std::string::npos) return false;
    char open_sign = src_[at] == '-' ? '-' : '\0';
    if (src_.compare(at + (open_sign ? 1 : 0), 2, "%}") != 0) return false;
    int start_line = line_;
    advance(at + (open_sign ? 1 : 0) + 2 - pos_);
    if (open_sign == '-') {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance(1);
    }
    bool line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    for (size_t search = pos_;;) {
      size_t tag = src_.find("{%", search);
      if (tag == std::string::npos) throw SyntaxError{"Missing end of raw directive", start_line};
      size_t p = tag + 2;
      char sign = (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ? src_[p] : '\0';
      size_t end = match_word(p + (sign ? 1 : 0), "endraw");
      char close_sign = end != std::string::npos && end < src_.size() && (src_[end] == '-' || src_[end] == '+') ? src_[end] : '\0';
      if (end == std::string::npos || src_.compare(end + (close_sign ? 1 : 0), 2, "%}") != 0) {
        search = tag + 2;
        continue;
      }
      std::string body = src_.substr(pos_, tag - pos_);
      int body_line = line_;
      strip_before_tag(body, sign, false, line_starting);
      emit_text(body, body_line);
      advance(end + (close_sign ? 1 : 0) + 2 - pos_);
      after_end(close_sign, true);
      return true;
    }
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  static int count_newlines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
  }

  void emit_text(const std::string& text, int line) {
    if (!text.empty()) tokens_.push_back({Token::Type::kText, text, line});
  }

  void advance(size_t n) {
    for (size_t i = 0; i < n; ++i) line_ += src_[pos_ + i] == '\n';
    pos_ += n;
  }

  // After a block or comment end: '-' strips all whitespace, trim_blocks drops one newline.
  void after_end(char sign, bool block_like) {
    if (sign == '-') {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance(1);
    } else if (sign != '+' && block_like && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      advance(1);
    }
  }

  void lex_comment() {
    int start_line = line_;
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) throw SyntaxError{"unexpected end of template, missing end of comment tag", start_line};
    char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    advance(end + 2 - pos_);
    after_end(sign, true);
  }

  void lex_tag(bool variable) {
    tokens_.push_back({variable ? Token::Type::kVarBegin : Token::Type::kBlockBegin, "", line_});
    const char* close = variable ? "}}" : "%}";
    for (;;) {
      if (pos_ >= src_.size()) throw SyntaxError{"unexpected end of template, expected end of tag", line_};
      char sign = src_[pos_];
      if ((sign == '-' || (!variable && sign == '+')) && src_.compare(pos_ + 1, 2, close) == 0) {
        tokens_.push_back({variable ? Token::Type::kVarEnd : Token::Type::kBlockEnd, "", line_});
        advance(3);
        after_end(sign, !variable);
        return;
      }
      if (src_.compare(pos_, 2, close) == 0) {
        tokens_.push_back({variable ? Token::Type::kVarEnd : Token::Type::kBlockEnd, "", line_});
        advance(2);
        after_end('\0', !variable);
        return;
      }
      lex_expression_token();
    }
  }

  void lex_expression_token() {
    char c = src_[pos_];
    if (is_space(c)) {
      advance(1);
      return;
    }
    int line = line_;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
      tokens_.push_back({Token::Type::kName, src_.substr(pos_, end - pos_), line});
      pos_ = end;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = pos_;
      auto digits = [&] {
        while (end < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
      };
      digits();
      bool is_float = false;
      if (end + 1 < src_.size() && src_[end] == '.' && std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
        is_float = true;
        ++end;
        digits();
      }
      if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
        size_t e = end + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
          is_float = true;
          end = e;
          digits();
        }
      }
      std::string text;
      for (size_t i = pos_; i < end; ++i) {
        if (src_[i] != '_') text += src_[i];
      }
      tokens_.push_back({is_float ? Token::Type::kFloat : Token::Type::kInt, text, line});
      pos_ = end;
      return;
    }
    if (c == '\'' || c == '"') {
      size_t i = pos_ + 1;
      std::string body;
      while (i < src_.size() && src_[i] != c) {
        if (src_[i] == '\\' && i + 1 < src_.size()) body += src_[i++];
        body += src_[i++];
      }
      if (i >= src_.size()) throw SyntaxError{"unexpected end of string literal", line};
      tokens_.push_back({Token::Type::kString, decode_string(body), line});
      advance(i + 1 - pos_);
      return;
    }
    static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/", "*", "%", "~", "[", "]",
                                       "(", ")", "{", "}", ",", ".", ":", "|", "<", ">", "=", ";"};
    for (const char* op : kOps) {
      size_t n = std::strlen(op);
      if (src_.compare(pos_, n, op) == 0) {
        tokens_.push_back({Token::Type::kOp, op, line});
        pos_ += n;
        return;
      }
    }
    throw SyntaxError{std::string("unexpected char '") + c + "'", line};
  }

  std::string src_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexOptions& options) {
  std::string src = normalize_newlines(source);
  if (!options.keep_trailing_newline && !src.empty() && src.back() == '\n') src.pop_back();
  return Lexer(std::move(src), options).run();
}

}  // namespace lemma::jinja
