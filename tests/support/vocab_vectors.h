// Reader for the tokenizer vectors in shared/data/tokenizers (<name>.gguf.inp / .gguf.out; the
// format is described in shared/data/MANIFEST.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lemma::testing {

struct VocabVectors {
  std::vector<std::string> inputs;             // test strings, exactly as written
  std::vector<std::vector<int32_t>> expected;  // ids per input (no BOS/EOS, specials not parsed)
};

// `gguf_path` is the .gguf file; its .inp and .out siblings are read.
VocabVectors read_vocab_vectors(const std::filesystem::path& gguf_path);

}  // namespace lemma::testing
