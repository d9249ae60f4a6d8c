#include "lemma/grammar/token_constraint.h"

#include "lemma/base/error.h"

namespace lemma::grammar {

std::optional<int32_t> find_token(const TokenVocabulary& vocab, std::string_view text) {
  for (size_t id = 0; id < vocab.special_text.size(); ++id) {
    if (vocab.special[id] && vocab.special_text[id] == text) return static_cast<int32_t>(id);
  }
  for (size_t id = 0; id < vocab.bytes.size(); ++id) {
    if (!vocab.special[id] && vocab.bytes[id] == text) return static_cast<int32_t>(id);
  }
  return std::nullopt;
}

Grammar resolve_tokens(Grammar grammar, const TokenVocabulary& vocab) {
  if (grammar.token_refs().empty()) return grammar;
  grammar.resolve_token_names([&](const std::string& name) {
    const std::optional<int32_t> id = find_token(vocab, name);
    if (!id) fail<InvalidArgument>("grammar: token '{}' is not a token of this vocabulary", name);
    return *id;
  });
  for (const TokenRef& r : grammar.token_refs()) {
    if (r.id < 0 || r.id >= vocab.size())
      fail<InvalidArgument>("grammar: token id {} is outside the vocabulary ({} tokens)", r.id, vocab.size());
  }
  return grammar;
}

namespace {
const std::shared_ptr<const Grammar>& checked(const std::shared_ptr<const Grammar>& g) {
  for (const TokenRef& r : g->token_refs()) {
    if (r.id < 0) fail<InvalidArgument>("grammar: token '{}' was never resolved against the vocabulary", r.name);
  }
  return g;
}
}  // namespace

ConstraintState::ConstraintState(const TokenConstraint& constraint)
    : grammar_(checked(constraint.grammar)),
      vocabulary_(constraint.vocabulary),
      states_(grammar_),
      cache_(1024),
      matcher_(states_, vocabulary_->vocab, vocabulary_->trie, &cache_) {}

}  // namespace lemma::grammar
