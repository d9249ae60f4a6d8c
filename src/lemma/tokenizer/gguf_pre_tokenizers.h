// tokenizer.ggml.pre -> the split regexes (applied in order, each splitting every piece, as an
// HF Sequence of Split(Isolated) does) and the vocabulary flags llama.cpp ties to that name.
// The regexes are the ones in each model's tokenizer.json; PCRE2 runs them directly, so no
// hand-written splitters are needed. Static data; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lemma::tok {

struct GgufPreTokenizer {
  std::string_view family;            // canonical name (first alias)
  std::vector<std::string> regexes;
  bool ignore_merges = false;         // whole-word vocabulary hits skip BPE (Llama-3, Tekken)
  bool add_bos = false;               // default when tokenizer.ggml.add_bos_token is absent
};

// nullptr for an unknown name.
const GgufPreTokenizer* find_gguf_pre_tokenizer(std::string_view name);
// The "default" entry (used, with a warning, for unknown names).
const GgufPreTokenizer& default_gguf_pre_tokenizer();

}  // namespace lemma::tok
