// Token-level constraint: which tokens may come next (a bitset over the vocabulary), accepting
// tokens, rolling back N tokens (for speculation) and telling when the grammar is complete.
// Masks are computed by walking the token trie from the recognizer's state; a mask depends only on
// that state, so masks are cached per state in a MaskCache shared by matchers of one grammar.
// Where the state has token edges (token references), the tokens they take are added to the mask:
// the named ones (special ones included) and, for a negated edge, every text token it allows.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "lemma/grammar/recognizer.h"
#include "lemma/grammar/token_trie.h"

namespace lemma::grammar {

// One bit per token id, 64 ids per word.
using TokenMask = std::vector<uint64_t>;

inline bool mask_allows(const TokenMask& m, int32_t id) {
  return (m[static_cast<size_t>(id) >> 6] >> (static_cast<size_t>(id) & 63)) & 1u;
}

class MaskCache {
 public:
  explicit MaskCache(size_t max_entries = 4096) : max_entries_(max_entries) {}
  const TokenMask* find(int32_t state) const {
    auto it = masks_.find(state);
    return it == masks_.end() ? nullptr : &it->second;
  }
  const TokenMask& store(int32_t state, TokenMask mask);

 private:
  size_t max_entries_;
  std::unordered_map<int32_t, TokenMask> masks_;
};

class TokenMatcher {
 public:
  // `states`, `vocab`, `trie` (and `cache`, which may be null) must outlive the matcher.
  TokenMatcher(ParserStates& states, const TokenVocabulary& vocab, const TokenTrie& trie, MaskCache* cache);

  // The tokens allowed next: those whose bytes the grammar can read now, those a live token edge
  // takes, and the end ids when the input so far is complete.
  const TokenMask& next_mask();
  // Feeds a token; false (and nothing changes) when the grammar refuses it. A special token is
  // accepted only through a token edge naming it. An end id no live token edge names is accepted
  // only when the grammar is complete, and ends the matcher.
  bool accept(int32_t token);
  // Undoes the last `n` accepted tokens.
  void rollback(size_t n);
  bool is_complete() const { return recognizer_.accepting(); }
  // Recognizer::forced_bytes from the current position ("" once an end id was accepted).
  std::string forced_bytes(size_t max_bytes) const { return ended_ ? std::string() : recognizer_.forced_bytes(max_bytes); }
  bool is_finished() const { return ended_ || recognizer_.finished(); }
  size_t tokens_accepted() const { return token_starts_.size(); }

 private:
  void compute_mask(int32_t state, TokenMask& mask);
  // How many string characters (string_char_forms), in any order, `state` surely reads: up to
  // `up_to`, or TokenTrie::kUnbounded when the states they lead to form a small closed set.
  uint32_t string_chars_readable(int32_t state, uint32_t up_to);  // memoised for the usual up_to
  uint32_t prove_string_chars(int32_t state, uint32_t up_to);
  // Whether `state` reads any run of ASCII string characters (is_ascii_string_char): it and the
  // states they lead to, at most two, step on each of them to one another. Memoised per state.
  bool reads_any_ascii_string_chars(int32_t state);
  // Sets the bits of the tokens of `trie` that `state` can read. A subtree whose tokens go on with
  // ASCII string characters only, reached in a state that reads any run of them, is taken whole.
  void walk(const TokenTrie& trie, int32_t state, TokenMask& mask);
  bool is_end_id(int32_t token) const;
  // Neither special nor an end id: what negated token edges take.
  bool is_text_token(int32_t token) const;
  // ORs in the tokens the token edges of `state` take (mask holds the byte walk's result).
  void add_token_edges(int32_t state, TokenMask& mask);

  Recognizer recognizer_;
  const TokenVocabulary* vocab_;
  const TokenTrie* trie_;
  MaskCache* cache_;
  std::vector<size_t> token_starts_;  // byte position before each accepted token
  bool ended_ = false;
  TokenMask scratch_;
  TokenMask text_tokens_;  // the text tokens, built when a negated token edge needs them
  std::vector<int32_t> edge_ids_;
  std::vector<std::pair<int32_t, bool>> edge_bits_;
  std::vector<int32_t> walk_states_;
  std::vector<int32_t> seen_states_, level_states_, after_states_, form_states_, form_next_;
};

}  // namespace lemma::grammar
