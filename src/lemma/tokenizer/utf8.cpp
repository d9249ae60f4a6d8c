#include "lemma/tokenizer/utf8.h"

namespace lemma::tok {

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Length of the valid sequence at s[pos], 0 if invalid, or -1 if valid so far but truncated.
static int sequence_status(std::string_view s, size_t pos) {
  const auto c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) return 1;
  int len;
  char32_t min;
  if ((c & 0xE0) == 0xC0) { len = 2; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { len = 3; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { len = 4; min = 0x10000; }
  else return 0;
  char32_t cp = c & (0x7F >> len);
  for (int i = 1; i < len; ++i) {
    if (pos + i >= s.size()) return -1;
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

char32_t next_code_point(std::string_view s, size_t& pos) {
  const int st = sequence_status(s, pos);
  if (st <= 0) {
    ++pos;
    return 0xFFFD;
  }
  const auto c = static_cast<unsigned char>(s[pos]);
  char32_t cp = st == 1 ? c : (c & (0x7F >> st));
  for (int i = 1; i < st; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  pos += st;
  return cp;
}

size_t complete_utf8_prefix(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const int st = sequence_status(s, pos);
    if (st < 0) break;
    pos += st == 0 ? 1 : st;
  }
  return pos;
}

// Bytes covered by one U+FFFD at an invalid sequence: the "maximal subpart" rule of Unicode
// (also Rust's from_utf8_lossy and Python's errors="replace"), so counts match HF decoding.
static size_t invalid_span(std::string_view s, size_t pos) {
  const auto c = static_cast<unsigned char>(s[pos]);
  int len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
  else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
  else return 1;
  size_t n = 1;
  for (int i = 1; i < len && pos + n < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[pos + n]);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) break;
    ++n;
  }
  return n;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const int st = sequence_status(s, pos);
    if (st > 0) {
      out.append(s.substr(pos, st));
      pos += st;
    } else {
      append_utf8(out, 0xFFFD);
      pos += invalid_span(s, pos);
    }
  }
  return out;
}

}  // namespace lemma::tok
