// The loaded tokenizer state behind lemma::Tokenizer (internal to this folder). Built once by
// a loader, then shared read-only. `model` refers to `vocab`, so a Pipeline never moves.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemma/tokenizer/added_tokens.h"
#include "lemma/tokenizer/decoders.h"
#include "lemma/tokenizer/model.h"
#include "lemma/tokenizer/normalizers.h"
#include "lemma/tokenizer/post_processor.h"
#include "lemma/tokenizer/pre_tokenizers.h"
#include "lemma/tokenizer/tokenizer.h"
#include "lemma/tokenizer/vocab.h"

namespace lemma::tok {

struct Pipeline {
  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  Vocab vocab;
  AddedTokens added;
  NormalizerPtr normalizer;          // may be null
  PreTokenizerPtr pre_tokenizer;     // may be null (the whole segment is one word)
  std::unique_ptr<const Model> model;
  DecoderPtr decoder;                // may be null (concatenate token texts)
  PostProcessor post;
  bool clean_up_spaces = false;      // transformers' clean_up_tokenization_spaces
  std::optional<int32_t> bos, eos, eot, pad, unk;
  std::vector<int32_t> eog;          // ids that end generation (eos, eot and known turn ends)
  size_t max_token_bytes = 0;        // Tokenizer::max_token_bytes()
  std::string source;                // "tokenizer.json" or "gguf"
  std::string model_kind;            // e.g. "BPE", "SPM"

  // Fills `eog` from eos/eot and the vocabulary's well-known end-of-turn texts.
  void collect_end_of_generation_ids();
  // Fills `max_token_bytes` from the vocabulary and the stages.
  void compute_max_token_bytes();

  static Tokenizer finish(std::unique_ptr<Pipeline> p) {
    p->collect_end_of_generation_ids();
    p->compute_max_token_bytes();
    return Tokenizer(std::shared_ptr<const Pipeline>(std::move(p)));
  }
};

}  // namespace lemma::tok
