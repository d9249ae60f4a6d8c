// A tokenizer's vocabulary as the grammar matcher reads it: each token's bytes in mid-text,
// which tokens are special (never allowed by a grammar) and which end generation.
#pragma once

#include <memory>

#include "lemma/grammar/token_constraint.h"
#include "lemma/tokenizer/tokenizer.h"

namespace lemma::grammar {

TokenVocabulary tokenizer_vocabulary(const Tokenizer& tokenizer);
// The same with its trie, for TokenConstraint (built once per tokenizer: a 128K vocabulary takes
// tens of milliseconds).
std::shared_ptr<const VocabularyIndex> vocabulary_index(const Tokenizer& tokenizer);

}  // namespace lemma::grammar
