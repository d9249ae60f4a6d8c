// Golden tests: the llama.cpp vocab files in shared/data/tokenizers (GGUF tokenizer metadata +
// .inp/.out vectors produced by HF tokenizers, add_special=false, parse_special=false).
#include <sstream>

#include <gtest/gtest.h>

#include "golden_util.h"
#include "gguf_test_reader.h"
#include "lemma/tokenizer/tokenizer.h"
#include "support/shared_data.h"
#include "support/vocab_vectors.h"

namespace lemma {
namespace {

using testing::escaped;
using testing::ids_str;

// Checks every case of <name>.gguf.inp/.out against `tok`; returns the number of cases.
void expect_vectors(const Tokenizer& tok, const std::string& name) {
  const auto [inputs, expected] = testing::read_vocab_vectors(testing::shared_data("tokenizers/" + name + ".gguf"));
  ASSERT_EQ(inputs.size(), expected.size()) << name;
  ASSERT_GT(inputs.size(), 40u);
  size_t failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto got = tok.encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
    if (got != expected[i]) {
      ++failures;
      ADD_FAILURE() << name << " case " << i << " input " << escaped(inputs[i]) << "\n  expected "
                    << ids_str(expected[i]) << "\n  got      " << ids_str(got);
    }
  }
  EXPECT_EQ(failures, 0u) << name << ": " << failures << " of " << inputs.size() << " cases differ";
}

void run_gguf_vocab(const std::string& name) {
  const auto path = testing::shared_data("tokenizers/" + name + ".gguf");
  LEMMA_REQUIRE_SHARED(path);
  const testing::GgufTestReader md(path.string());
  const Tokenizer tok = Tokenizer::from_gguf_metadata(md);
  expect_vectors(tok, name);
}

TEST(GgufVocabGolden, Gpt2) { run_gguf_vocab("ggml-vocab-gpt-2"); }
TEST(GgufVocabGolden, Mpt) { run_gguf_vocab("ggml-vocab-mpt"); }
TEST(GgufVocabGolden, Starcoder) { run_gguf_vocab("ggml-vocab-starcoder"); }
TEST(GgufVocabGolden, DeepseekLlm) { run_gguf_vocab("ggml-vocab-deepseek-llm"); }
TEST(GgufVocabGolden, LlamaSpm) { run_gguf_vocab("ggml-vocab-llama-spm"); }
TEST(GgufVocabGolden, Phi3) { run_gguf_vocab("ggml-vocab-phi-3"); }

// The HF tokenizer.json of Phi-3-mini must give the same ids as the GGUF vectors of its vocab.
TEST(HfGolden, Phi3TokenizerJsonMatchesGgufVectors) {
  const auto dir = testing::shared_data("hf/phi-3-mini");
  LEMMA_REQUIRE_SHARED(dir / "tokenizer.json");
  const Tokenizer tok = Tokenizer::from_hf_dir(dir.string());
  expect_vectors(tok, "ggml-vocab-phi-3");
}

}  // namespace
}  // namespace lemma
