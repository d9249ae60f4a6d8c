// A request's output constraint for the engine: a compiled grammar plus the vocabulary index its
// token masks are computed over (both immutable, shared by every choice of the request and every
// request of one tokenizer), and the per-sequence state that masks and accepts tokens.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

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

// The id a token reference by text names in `vocab`: the special token with that text, else the
// lowest-id text token whose bytes are exactly it; nullopt when there is none.
std::optional<int32_t> find_token(const TokenVocabulary& vocab, std::string_view text);
// Binds `grammar`'s token references to `vocab` (every TokenConstraint's grammar must be bound): names
// get their ids (find_token), ids are checked. Throws InvalidArgument naming an unknown token text or
// an id outside the vocabulary. A grammar without token references is returned unchanged.
Grammar resolve_tokens(Grammar grammar, const TokenVocabulary& vocab);

struct TokenConstraint {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const VocabularyIndex> vocabulary;
  std::string description;  // e.g. "json_schema person", for errors and logs
};

// One sequence's matcher over a constraint: its own parser states and mask cache (neither is
// thread-safe). Not movable (the matcher points into it): hold it by pointer. Throws
// InvalidArgument when the grammar has a token reference resolve_tokens has not bound.
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
