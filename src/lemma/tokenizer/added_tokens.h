// Added tokens (HF "added_tokens"; GGUF control and user-defined tokens): strings matched in
// the input before normalisation/pre-tokenisation and emitted as single ids. Special (control)
// tokens are matched only when the caller asks (parse_special); non-special ones always, as HF
// and llama.cpp do. Matching is leftmost-longest over a byte trie.
// Immutable after construction; split() is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lemma/tokenizer/marked_text.h"

namespace lemma::tok {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;       // also swallow whitespace on the left
  bool rstrip = false;       // ... and on the right
  bool single_word = false;  // only match when not inside a word
  bool normalized = false;   // match against the normalized text rather than the raw input
};

// A run of text (id < 0) or one added token (id >= 0).
struct Segment {
  std::string text;
  int32_t id = -1;
  size_t begin = 0;  // where a run of text starts in the split input
};

class AddedTokens {
 public:
  AddedTokens() = default;
  explicit AddedTokens(std::vector<AddedToken> tokens);

  // Splits `text` on the tokens whose `normalized` flag equals `normalized_phase`. A special
  // token matches only where no byte of it is in `marks` (bytes that came from the request).
  std::vector<Segment> split(std::string_view text, bool normalized_phase, bool parse_special,
                             std::span<const ByteRange> marks = {}) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }

 private:
  struct Node {
    std::map<unsigned char, int32_t> children;
    int32_t token = -1;  // index into tokens_
  };
  struct Trie {
    std::vector<Node> nodes{Node{}};
    void insert(const std::string& key, int32_t token);
  };
  // Longest allowed match starting at `pos`: (token index, length), or (-1, 0).
  std::pair<int32_t, size_t> longest_match(const Trie& trie, std::string_view text, size_t pos,
                                           bool parse_special, std::span<const ByteRange> marks) const;

  std::vector<AddedToken> tokens_;
  Trie raw_trie_, normalized_trie_;
};

}  // namespace lemma::tok
