// Small UTF-8 helpers shared by the tokenizer stages. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lemma::tok {

// Length of the UTF-8 sequence introduced by lead byte `c` (1 for invalid lead bytes, so a
// malformed string still advances byte by byte).
inline size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) return 2;
  if ((c & 0xF0) == 0xE0) return 3;
  if ((c & 0xF8) == 0xF0) return 4;
  return 1;
}

// Appends code point `cp` as UTF-8.
void append_utf8(std::string& out, char32_t cp);

// Decodes the code point starting at s[pos]; advances pos. Invalid bytes decode as U+FFFD.
char32_t next_code_point(std::string_view s, size_t& pos);

// Number of bytes at the start of `s` that form complete, valid UTF-8 sequences, stopping
// before a sequence that is incomplete at the end of `s` (it may still be completed later).
// Invalid sequences in the middle count as consumed (they will become U+FFFD).
size_t complete_utf8_prefix(std::string_view s);

// Replaces every invalid byte sequence with U+FFFD.
std::string sanitize_utf8(std::string_view s);

}  // namespace lemma::tok
