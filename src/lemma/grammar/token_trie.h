// The vocabulary as a trie of token byte strings, flattened in preorder: walking it from a parser
// state visits each shared prefix once, and a refused prefix skips its whole subtree.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lemma::grammar {

// What the matcher needs from a tokenizer: each token's bytes in mid-text, which tokens are special
// (allowed only where a grammar's token reference names them) and which end generation (allowed once
// the grammar is complete).
struct TokenVocabulary {
  std::vector<std::string> bytes;   // by token id
  std::vector<bool> special;        // by token id
  std::vector<std::string> special_text;  // by token id: a special token's text ("<|im_end|>"), for
                                          // token references by name; "" for the others (may be empty)
  std::vector<int32_t> end_ids;     // EOS / end-of-turn ids
  int32_t size() const { return static_cast<int32_t>(bytes.size()); }
};

// The UTF-8 forms of a JSON string's plain characters (U+0020 and up, not '"' or '\\', no
// surrogates), each a sequence of byte ranges; forms are told apart by their first byte.
struct Utf8Form {
  uint8_t length;
  std::array<std::pair<uint8_t, uint8_t>, 4> ranges;
};
std::span<const Utf8Form> string_char_forms();
// How many characters of string_char_forms() `bytes` is, or -1 when it is not a whole number of them.
int string_char_count(std::string_view bytes);
// A JSON string's plain ASCII characters: 0x20-0x7F except '"' and '\\'.
inline bool is_ascii_string_char(unsigned char b) { return b >= 0x20 && b <= 0x7F && b != '"' && b != '\\'; }

class TokenTrie {
 public:
  struct Node {
    unsigned char byte;
    // Every token of the subtree goes on from here with ASCII string characters only (0x20-0x7F
    // but '"' and '\\'): from a state that reads any run of them, the subtree is all allowed.
    bool ascii_suffixes;
    uint32_t depth;        // 1 for a token's first byte
    uint32_t subtree_end;  // index just past this node's subtree
    uint32_t first_token;  // tokens ending here: token_ids_[first_token, last_token)
    uint32_t last_token;
    uint32_t subtree_tokens_end;  // the subtree's tokens: token_ids_[first_token, subtree_tokens_end)
  };

  // Special and empty tokens are left out.
  explicit TokenTrie(const TokenVocabulary& vocab);
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  uint32_t max_depth() const { return max_depth_; }

  // Bounds on the characters of string-character tokens: a state that surely reads any run of
  // kStringCharLimits[i] string characters accepts string_char_tokens(i) without a walk.
  static constexpr uint32_t kUnbounded = UINT32_MAX;
  static constexpr std::array<uint32_t, 3> kStringCharLimits{4, 16, kUnbounded};
  // The non-empty tokens of at most kStringCharLimits[i] string characters, one bit per id, 64 ids
  // per word.
  const std::vector<uint64_t>& string_char_tokens(size_t i) const { return string_char_tokens_[i]; }
  // The trie of the other non-special, non-empty tokens.
  const TokenTrie& other_tokens(size_t i) const { return *other_[i]; }

 private:
  TokenTrie() = default;
  void build(const TokenVocabulary& vocab, std::vector<int32_t> order);

  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
  uint32_t max_depth_ = 0;
  std::array<std::vector<uint64_t>, kStringCharLimits.size()> string_char_tokens_;
  std::array<std::shared_ptr<const TokenTrie>, kStringCharLimits.size()> other_;
};

}  // namespace lemma::grammar
