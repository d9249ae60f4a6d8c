#include "lemma/grammar/tokenizer_vocabulary.h"
#include <algorithm>

namespace lemma::grammar {

TokenVocabulary tokenizer_vocabulary(const Tokenizer& tok) {
  TokenVocabulary v;
  const int32_t n = tok.vocab_size();
  v.bytes.resize(static_cast<size_t>(n));
  v.special.resize(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    v.special[static_cast<size_t>(id)] = tok.is_special(id) || tok.token_type(id) == TokenType::kControl;
    if (!v.special[static_cast<size_t>(id)]) v.bytes[static_cast<size_t>(id)] = tok.token_bytes(id);
    else {
      v.special_text.resize(static_cast<size_t>(n));
      v.special_text[static_cast<size_t>(id)] = std::string(tok.token_text(id));
    }
    if (tok.is_end_of_generation(id)) v.end_ids.push_back(id);
  }
  if (tok.eos_id() && std::find(v.end_ids.begin(), v.end_ids.end(), *tok.eos_id()) == v.end_ids.end())
    v.end_ids.push_back(*tok.eos_id());
  return v;
}

std::shared_ptr<const VocabularyIndex> vocabulary_index(const Tokenizer& tokenizer) {
  return std::make_shared<const VocabularyIndex>(tokenizer_vocabulary(tokenizer));
}

}  // namespace lemma::grammar
