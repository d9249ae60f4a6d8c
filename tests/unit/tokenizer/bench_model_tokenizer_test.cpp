// The tiny benchmark models of shared/tools/make_bench_model.py ship the same byte-level BPE
// vocabulary twice (GGUF metadata and tokenizer.json + tokenizer_config.json); the script's
// author checked that HF tokenizers and llama.cpp agree on them. Both of our loaders must
// therefore give identical ids (BOS included) and texts.
#include <cstdlib>

#include <gtest/gtest.h>

#include "golden_util.h"
#include "gguf_test_reader.h"
#include "lemma/tokenizer/tokenizer.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

TEST(BenchModelTokenizer, GgufAndTokenizerJsonAgree) {
  const auto script = testing::shared_dir() / "tools" / "make_bench_model.py";
  LEMMA_REQUIRE_SHARED(script);
  if (!std::filesystem::exists("/usr/bin/python3")) {
    if (testing::running_in_ci()) FAIL() << "needs /usr/bin/python3 with numpy";
    GTEST_SKIP() << "needs /usr/bin/python3 with numpy";
  }
  const auto out = testing::build_scratch("tokenizer-bench-model");
  const auto gguf = out / "tiny-f32.gguf";
  if (!std::filesystem::exists(gguf) || !std::filesystem::exists(out / "hf" / "tokenizer.json")) {
    const std::string cmd = "/usr/bin/python3 '" + script.string() + "' --preset tiny --seed 0 --dtype f32 --out '" +
                            out.string() + "' > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  const Tokenizer g = Tokenizer::from_gguf_metadata(testing::GgufTestReader(gguf.string()));
  const Tokenizer h = Tokenizer::from_hf_dir((out / "hf").string());
  EXPECT_EQ(g.vocab_size(), h.vocab_size());
  EXPECT_EQ(g.bos_id(), h.bos_id());
  EXPECT_EQ(g.eos_id(), h.eos_id());
  EXPECT_TRUE(g.adds_bos());
  EXPECT_TRUE(h.adds_bos());
  const std::string inputs = testing::read_file(testing::shared_data("tokenizers/ggml-vocab-gpt-2.gguf.inp"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t cases = 0;
  for (size_t pos = 0; pos < inputs.size();) {
    const size_t next = inputs.find(sep, pos);
    const std::string text = inputs.substr(pos, next - pos);
    pos = next + sep.size();
    const auto ids = g.encode(text, true, false);
    EXPECT_EQ(ids, h.encode(text, true, false)) << testing::escaped(text);
    EXPECT_EQ(g.decode(ids, true), text);
    EXPECT_EQ(h.decode(ids, true), text);
    ++cases;
  }
  EXPECT_GT(cases, 40u);
}

}  // namespace
}  // namespace lemma
