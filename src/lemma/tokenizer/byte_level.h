// GPT-2's reversible byte <-> printable-character map (ByteLevel pre-tokenizer and decoder).
// Tables are built once; all functions are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lemma::tok {

// Maps every byte of `bytes` to its printable stand-in character (UTF-8 encoded).
std::string byte_level_encode(std::string_view bytes);

// Inverse of byte_level_encode. Characters outside the map are copied through unchanged
// (HF does the same for added tokens that were never byte-encoded).
std::string byte_level_decode(std::string_view text);

}  // namespace lemma::tok
