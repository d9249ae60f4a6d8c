#include "lemma/grammar/token_constraint.h"

namespace lemma::grammar {

ConstraintState::ConstraintState(const TokenConstraint& constraint)
    : grammar_(constraint.grammar),
      vocabulary_(constraint.vocabulary),
      states_(grammar_),
      cache_(1024),
      matcher_(states_, vocabulary_->vocab, vocabulary_->trie, &cache_) {}

}  // namespace lemma::grammar
