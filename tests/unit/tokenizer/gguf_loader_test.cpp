// GGUF metadata -> pipeline: token types, special ids, BOS/EOS flags, pre-tokenizer fallback,
// and agreement with the tokenizer.json form of the same vocabulary.
#include <gtest/gtest.h>

#include "fake_gguf.h"
#include "gguf_test_reader.h"
#include "lemma/base/error.h"
#include "lemma/tokenizer/tokenizer.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

using testing::FakeGguf;

// A tiny byte-level vocabulary: every printable ASCII char, "Ġ" (space), merges for "Ġa", "ab".
FakeGguf tiny_bpe(const std::string& pre) {
  FakeGguf md;
  std::vector<std::string> tokens;
  for (char c = '!'; c <= '~'; ++c) tokens.emplace_back(1, c);
  tokens.push_back("\xc4\xa0");          // "Ġ" = byte-level space
  tokens.push_back("\xc4\xa0" "a");      // "Ġa"
  tokens.push_back("ab");
  tokens.push_back("<|end|>");
  tokens.push_back("<user>");
  std::vector<int64_t> types(tokens.size(), 1);
  types[types.size() - 2] = 3;  // control
  types[types.size() - 1] = 4;  // user-defined
  md.values["tokenizer.ggml.model"] = std::string("gpt2");
  md.values["tokenizer.ggml.pre"] = pre;
  md.values["tokenizer.ggml.tokens"] = tokens;
  md.values["tokenizer.ggml.token_type"] = types;
  md.values["tokenizer.ggml.merges"] = std::vector<std::string>{"\xc4\xa0 a", "a b"};
  md.values["tokenizer.ggml.eos_token_id"] = int64_t(static_cast<int64_t>(tokens.size()) - 2);
  return md;
}

TEST(GgufLoader, UnknownPreTokenizerFallsBackToDefault) {
  const Tokenizer tok = Tokenizer::from_gguf_metadata(tiny_bpe("no-such-pre"));
  const auto ids = tok.encode("ab a", false, false);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(tok.token_text(ids[0]), "ab");
  EXPECT_EQ(tok.token_text(ids[1]), "\xc4\xa0" "a");
  EXPECT_EQ(tok.decode(ids), "ab a");
  EXPECT_NE(tok.summary().find("no-such-pre"), std::string::npos);
}

TEST(GgufLoader, ControlTokensNeedParseSpecialUserDefinedDoNot) {
  const Tokenizer tok = Tokenizer::from_gguf_metadata(tiny_bpe("gpt-2"));
  const int32_t end = *tok.token_id("<|end|>"), user = *tok.token_id("<user>");
  EXPECT_TRUE(tok.is_special(end));
  EXPECT_FALSE(tok.is_special(user));
  EXPECT_EQ(tok.encode("<|end|>", false, true), std::vector<int32_t>{end});
  const auto plain = tok.encode("<|end|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok.decode(plain), "<|end|>");
  EXPECT_EQ(tok.encode("<user>", false, false), std::vector<int32_t>{user});
  EXPECT_EQ(tok.decode(std::vector<int32_t>{user, end}, /*skip_special=*/true), "<user>");
  EXPECT_EQ(tok.eos_id(), end);
  EXPECT_FALSE(tok.adds_bos());
}

TEST(GgufLoader, RejectsUnsupportedModel) {
  FakeGguf md = tiny_bpe("gpt-2");
  md.values["tokenizer.ggml.model"] = std::string("t5");
  EXPECT_THROW(Tokenizer::from_gguf_metadata(md), Unsupported);
}

TEST(GgufLoader, MetadataFlagsOfSharedVocabs) {
  const auto spm_path = testing::shared_data("tokenizers/ggml-vocab-llama-spm.gguf");
  LEMMA_REQUIRE_SHARED(spm_path);
  const Tokenizer spm = Tokenizer::from_gguf_metadata(testing::GgufTestReader(spm_path.string()));
  EXPECT_EQ(spm.bos_id(), 1);
  EXPECT_EQ(spm.eos_id(), 2);
  EXPECT_EQ(spm.unk_id(), 0);
  EXPECT_TRUE(spm.adds_bos());
  EXPECT_FALSE(spm.adds_eos());
  EXPECT_EQ(spm.token_type(1), TokenType::kControl);
  EXPECT_EQ(spm.token_type(3), TokenType::kByte);
  EXPECT_EQ(spm.encode("Hello", true, false).front(), 1);
  EXPECT_EQ(spm.encode("<s>", false, true), std::vector<int32_t>{1});
  EXPECT_EQ(spm.decode(spm.encode(" Hello  world\n", false, false)), " Hello  world\n");

  const auto gpt2_path = testing::shared_data("tokenizers/ggml-vocab-gpt-2.gguf");
  const Tokenizer gpt2 = Tokenizer::from_gguf_metadata(testing::GgufTestReader(gpt2_path.string()));
  EXPECT_FALSE(gpt2.adds_bos());
  EXPECT_EQ(gpt2.vocab_size(), 50257);
  EXPECT_EQ(gpt2.eos_id(), 50256);
}

TEST(GgufLoader, ByteLevelRoundTripOnVectorInputs) {
  for (const char* name : {"ggml-vocab-gpt-2", "ggml-vocab-starcoder", "ggml-vocab-llama-spm"}) {
    const auto path = testing::shared_data(std::string("tokenizers/") + name + ".gguf");
    LEMMA_REQUIRE_SHARED(path);
    const Tokenizer tok = Tokenizer::from_gguf_metadata(testing::GgufTestReader(path.string()));
    const std::string inputs = testing::read_file(testing::shared_data(std::string("tokenizers/") + name + ".gguf.inp"));
    size_t pos = 0;
    const std::string sep = "\n__ggml_vocab_test__\n";
    while (pos < inputs.size()) {
      const size_t next = inputs.find(sep, pos);
      const std::string text = inputs.substr(pos, next - pos);
      pos = next + sep.size();
      // SentencePiece drops one leading space on decode (the dummy prefix it added).
      EXPECT_EQ(tok.decode(tok.encode(text, false, false)), text) << name << ": " << text;
    }
  }
}


// The GGUF and tokenizer.json forms of Phi-3 agree with special-token parsing too (rstrip).
TEST(GgufLoader, Phi3GgufMatchesTokenizerJsonWithSpecialTokens) {
  const auto gguf = testing::shared_data("tokenizers/ggml-vocab-phi-3.gguf");
  LEMMA_REQUIRE_SHARED(gguf);
  const Tokenizer g = Tokenizer::from_gguf_metadata(testing::GgufTestReader(gguf.string()));
  const Tokenizer h = Tokenizer::from_hf_dir(testing::shared_data("hf/phi-3-mini").string());
  for (const char* text : {"<|user|>\nHi there<|end|>\n<|assistant|>\n  Hello</s>  x", "a <s> b <unk>  c",
                           "<|system|>  sys<|end|><|endoftext|> z"}) {
    EXPECT_EQ(g.encode(text, false, true), h.encode(text, false, true)) << text;
    // The GGUF adds BOS (tokenizer.ggml.add_bos_token), Phi-3's tokenizer_config does not.
    auto with_bos = g.encode(text, true, false);
    ASSERT_EQ(with_bos.front(), 1);
    with_bos.erase(with_bos.begin());
    EXPECT_EQ(with_bos, h.encode(text, true, false)) << text;
  }
  EXPECT_TRUE(g.is_end_of_generation(32007));
  EXPECT_TRUE(h.is_end_of_generation(32007));
  EXPECT_TRUE(g.is_end_of_generation(*g.eos_id()));
  EXPECT_FALSE(g.is_end_of_generation(1));
}

}  // namespace
}  // namespace lemma
