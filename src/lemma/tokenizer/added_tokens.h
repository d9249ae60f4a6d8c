// Added tokens (HF "added_tokens"; GGUF control and user-defined tokens): strings matched in
// the input before normalisation/pre-tokenisation and emitted as single ids. Special (control)
// tokens are matched only when the caller asks (parse_special); non-special ones always, as HF
// and llama.cpp do.
//
// Matching follows HF tokenizers (added_vocabulary.rs): tokens with `normalized: false` are
// found in the raw text, those with `normalized: true` in each normalized piece, by their own
// *normalized* form (Llama 2's "</s>" under Prepend("▁") is "▁</s>": it matches " </s>" or a
// text that starts with "</s>", never "word</s>"). Matches are leftmost-longest and do not
// overlap; a match that is refused (special without parse_special, single_word inside a word)
// is passed over whole and stays text.
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

class Normalizer;

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
  // `normalizer` (may be null) gives the form in which `normalized` tokens are matched.
  explicit AddedTokens(std::vector<AddedToken> tokens, const Normalizer* normalizer = nullptr);

  // Splits `text` on the tokens whose `normalized` flag equals `normalized_phase`. A special
  // token matches only where no byte of it is in `marks` (bytes that came from the request).
  std::vector<Segment> split(std::string_view text, bool normalized_phase, bool parse_special,
                             std::span<const ByteRange> marks = {}) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }
  // The longest text one added token matches (its content or its normalized form), in bytes.
  size_t longest_match_text() const { return longest_; }

 private:
  struct Node {
    std::map<unsigned char, int32_t> children;
    int32_t token = -1;  // index into tokens_
  };
  struct Trie {
    std::vector<Node> nodes{Node{}};
    void insert(const std::string& key, int32_t token);
  };
  // Longest match starting at `pos` (special tokens over `marks` left out): (token index,
  // length), or (-1, 0).
  std::pair<int32_t, size_t> longest_match(const Trie& trie, std::string_view text, size_t pos,
                                           std::span<const ByteRange> marks) const;

  std::vector<AddedToken> tokens_;
  Trie raw_trie_, normalized_trie_;
  size_t longest_ = 0;
};

}  // namespace lemma::tok
