// Helpers for the tokenizer golden tests: readable id lists and C-escaped inputs, so a failing
// case prints exactly which input mismatched.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace lemma::testing {

inline std::string escaped(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '"') out += "\\\"";
    else if (c < 0x20) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

inline std::string ids_str(const std::vector<int32_t>& ids) { return fmt::format("[{}]", fmt::join(ids, " ")); }

}  // namespace lemma::testing
