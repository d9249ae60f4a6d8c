#include "lemma/tokenizer/vocab.h"

namespace lemma::tok {

std::optional<unsigned char> parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<unsigned char>(hi * 16 + lo);
}

Vocab::Vocab(std::vector<std::string> tokens, std::vector<TokenType> types)
    : tokens_(std::move(tokens)), types_(std::move(types)) {
  types_.resize(tokens_.size(), TokenType::kNormal);
  ids_.reserve(tokens_.size() * 2);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    ids_.emplace(tokens_[i], static_cast<int32_t>(i));
    index_byte_token(static_cast<int32_t>(i));
  }
}

std::optional<int32_t> Vocab::find(std::string_view text) const {
  auto it = ids_.find(text);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void Vocab::set(int32_t id, const std::string& text, TokenType type) {
  const auto i = static_cast<size_t>(id);
  if (i >= tokens_.size()) {
    tokens_.resize(i + 1);
    types_.resize(i + 1, TokenType::kUnused);
  }
  if (!tokens_[i].empty() && tokens_[i] != text) {
    auto it = ids_.find(tokens_[i]);
    if (it != ids_.end() && it->second == id) ids_.erase(it);
  }
  tokens_[i] = text;
  types_[i] = type;
  ids_[text] = id;
}

void Vocab::index_byte_token(int32_t id) {
  if (auto b = parse_byte_token(tokens_[static_cast<size_t>(id)]); b && !byte_tokens_[*b]) {
    byte_tokens_[*b] = id;
  }
}

bool Vocab::has_byte_tokens() const {
  for (const auto& b : byte_tokens_) {
    if (!b) return false;
  }
  return true;
}

}  // namespace lemma::tok
