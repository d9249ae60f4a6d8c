#include "lemma/tokenizer/byte_level.h"

#include <array>
#include <unordered_map>

#include "lemma/tokenizer/utf8.h"

namespace lemma::tok {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_text;
  std::unordered_map<char32_t, unsigned char> cp_to_byte;

  Tables() {
    // Printable Latin-1 bytes map to themselves; the other 68 are shifted to U+0100.. in
    // byte order, so that every byte has a visible, non-space character.
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = keep ? static_cast<char32_t>(b) : next++;
      append_utf8(byte_to_text[b], cp);
      cp_to_byte[cp] = static_cast<unsigned char>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string byte_level_encode(std::string_view bytes) {
  const auto& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += t.byte_to_text[b];
  return out;
}

std::string byte_level_decode(std::string_view text) {
  const auto& t = tables();
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const char32_t cp = next_code_point(text, pos);
    auto it = t.cp_to_byte.find(cp);
    if (it != t.cp_to_byte.end()) {
      out += static_cast<char>(it->second);
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  return out;
}

}  // namespace lemma::tok
