// A request's output constraint for the engine: a compiled grammar plus the vocabulary index its
// token masks are computed over (both immutable, shared by every choice of the request and every
// request of one tokenizer), and the per-sequence state that masks and accepts tokens.
#pragma once

#include <memory>
#include <string>

#include "lemma/grammar/grammar.h"
#include "lemma/grammar/parser_states.h"
#include "lemma/grammar/token_matcher.h"
#include "lemma/grammar/token_trie.h"

namespace lemma::grammar {

// A tokenizer's vocabulary as the matcher reads it, and its trie.
struct VocabularyIndex {
  explicit VocabularyIndex(TokenVocabulary v) : vocab(std::move(v)), trie(vocab) {}
  TokenVocabulary vocab;
  TokenTrie trie;
};

struct TokenConstraint {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const VocabularyIndex> vocabulary;
  std::string description;  // e.g. "json_schema person", for errors and logs
};

// One sequence's matcher over a constraint: its own parser states and mask cache (neither is
// thread-safe). Not movable (the matcher points into it): hold it by pointer.
class ConstraintState {
 public:
  explicit ConstraintState(const TokenConstraint& constraint);
  ConstraintState(const ConstraintState&) = delete;
  ConstraintState& operator=(const ConstraintState&) = delete;

  // The tokens allowed next (the end ids once the grammar is complete).
  const TokenMask& allowed() { return matcher_.next_mask(); }
  // Feeds a sampled token; false (nothing changes) when the grammar refuses it.
  bool accept(int32_t token) { return matcher_.accept(token); }
  bool is_complete() const { return matcher_.is_complete(); }
  // Jump-forward decoding: the bytes the grammar forces next, up to `max_bytes`: the longest string
  // that is the ONLY continuation from here, stopping where a choice is open (two or more bytes may
  // follow, or the text may end) and never cutting a UTF-8 character. E.g. after `{"name"` in a
  // compact schema with ", " / ": " separators whose required `name` is a string, it is `: "`;
  // inside a free string it is empty. The engine tokenises it as a draft and feeds the tokens
  // through accept() (and rollback() when the model disagrees).
  std::string forced_bytes(size_t max_bytes = 256) const { return matcher_.forced_bytes(max_bytes); }
  // Undoes the last `n` accepted tokens (speculation, drafts).
  void rollback(size_t n) { matcher_.rollback(n); }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const VocabularyIndex> vocabulary_;
  ParserStates states_;
  MaskCache cache_;
  TokenMatcher matcher_;
};

}  // namespace lemma::grammar
