// The token table: id <-> text and each token's type (GGUF's token_type numbering).
// Immutable after construction; thread-safe to read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lemma {

// Values are GGUF's tokenizer.ggml.token_type codes.
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

namespace tok {

class Vocab {
 public:
  Vocab() = default;
  // `types` may be empty (all normal). Later duplicates of a text do not replace the first id.
  Vocab(std::vector<std::string> tokens, std::vector<TokenType> types);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  const std::string& text(int32_t id) const { return tokens_[static_cast<size_t>(id)]; }
  TokenType type(int32_t id) const { return types_[static_cast<size_t>(id)]; }
  void set_type(int32_t id, TokenType t) { types_[static_cast<size_t>(id)] = t; }
  std::optional<int32_t> find(std::string_view text) const;
  // Grows the table (HF added tokens may have ids past the model vocabulary).
  void set(int32_t id, const std::string& text, TokenType type);

  // The "<0xXX>" token of a byte, if the vocabulary has it (SentencePiece byte fallback).
  std::optional<int32_t> byte_token(unsigned char b) const { return byte_tokens_[b]; }
  bool has_byte_tokens() const;

 private:
  void index_byte_token(int32_t id);

  std::vector<std::string> tokens_;
  std::vector<TokenType> types_;
  // Transparent hashing: lookups by string_view allocate nothing (hot in BPE and SPM).
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> ids_;
  std::optional<int32_t> byte_tokens_[256];
};

// Parses "<0xXX>" (exactly that form); nullopt otherwise.
std::optional<unsigned char> parse_byte_token(std::string_view text);

}  // namespace tok
}  // namespace lemma
