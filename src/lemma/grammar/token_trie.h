// The vocabulary as a trie of token byte strings, flattened in preorder: walking it from a parser
// state visits each shared prefix once, and a refused prefix skips its whole subtree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemma::grammar {

// What the matcher needs from a tokenizer: each token's bytes in mid-text, which tokens are special
// (never allowed by a grammar) and which end generation (allowed once the grammar is complete).
struct TokenVocabulary {
  std::vector<std::string> bytes;   // by token id
  std::vector<bool> special;        // by token id
  std::vector<int32_t> end_ids;     // EOS / end-of-turn ids
  int32_t size() const { return static_cast<int32_t>(bytes.size()); }
};

class TokenTrie {
 public:
  struct Node {
    unsigned char byte;
    uint32_t depth;        // 1 for a token's first byte
    uint32_t subtree_end;  // index just past this node's subtree
    uint32_t first_token;  // tokens ending here: token_ids_[first_token, last_token)
    uint32_t last_token;
  };

  // Special and empty tokens are left out.
  explicit TokenTrie(const TokenVocabulary& vocab);
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }
  uint32_t max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
  uint32_t max_depth_ = 0;
};

}  // namespace lemma::grammar
