// tokenizer.json (+ tokenizer_config.json) -> pipeline: added-token flags, BOS/EOS from the
// template and the config, merge formats, ignore_merges, malformed input.
#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/tokenizer/tokenizer.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

// A minimal tokenizer.json exercising added-token flags and the HF pipeline plumbing.
std::string tiny_hf_json() {
  return R"({
    "added_tokens": [
      {"id": 5, "content": "<eos>", "special": true, "lstrip": false, "rstrip": false, "single_word": false, "normalized": false},
      {"id": 6, "content": "<mask>", "special": true, "lstrip": true, "rstrip": true, "single_word": false, "normalized": false},
      {"id": 7, "content": "cat", "special": false, "lstrip": false, "rstrip": false, "single_word": true, "normalized": true}
    ],
    "normalizer": {"type": "Lowercase"},
    "pre_tokenizer": {"type": "WhitespaceSplit"},
    "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
                       "special_tokens": {"<eos>": {"id": "<eos>", "ids": [5], "tokens": ["<eos>"]}}},
    "decoder": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "c": 1, "t": 2, "s": 3, "[UNK]": 4}, "merges": [], "unk_token": "[UNK]"}
  })";
}

TEST(HfLoader, AddedTokenFlags) {
  const Tokenizer tok = Tokenizer::from_hf_json(tiny_hf_json(), R"({"eos_token": "<eos>", "add_eos_token": true})");
  EXPECT_EQ(tok.eos_id(), 5);
  EXPECT_TRUE(tok.adds_eos());
  // single_word: "cat" alone is the added token, inside "cats" it is not; the normalizer
  // (Lowercase) runs before normalized added tokens are matched.
  EXPECT_EQ(tok.encode("CAT", false, false), (std::vector<int32_t>{7}));
  EXPECT_EQ(tok.encode("cats", false, false), (std::vector<int32_t>{1, 0, 2, 3}));
  // lstrip/rstrip swallow the spaces around <mask>; special tokens need parse_special.
  EXPECT_EQ(tok.encode("a  <mask>  a", false, true), (std::vector<int32_t>{0, 6, 0}));
  EXPECT_EQ(tok.encode("a <eos>", true, true), (std::vector<int32_t>{0, 5, 5}));
  // Unknown characters become [UNK]; no decoder means HF's space join.
  EXPECT_EQ(tok.encode("x", false, false), (std::vector<int32_t>{4}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{0, 2, 5}, true), "a t");
  EXPECT_THROW(tok.decode(std::vector<int32_t>{99}), InvalidArgument);
}

TEST(HfLoader, BosEosFromConfigAndTemplate) {
  const auto llama = testing::shared_data("hf/llama2-spm");
  const auto phi3 = testing::shared_data("hf/phi-3-mini");
  LEMMA_REQUIRE_SHARED(llama / "tokenizer.json");
  const Tokenizer l = Tokenizer::from_hf_dir(llama.string());
  EXPECT_EQ(l.bos_id(), 1);
  EXPECT_EQ(l.eos_id(), 2);
  EXPECT_TRUE(l.adds_bos());
  EXPECT_FALSE(l.adds_eos());
  EXPECT_TRUE(l.is_special(1));
  EXPECT_EQ(l.token_type(0), TokenType::kUnknown);
  EXPECT_TRUE(l.is_special(0));
  EXPECT_EQ(l.token_type(l.token_id("<0x0A>").value()), TokenType::kByte);
  const Tokenizer p = Tokenizer::from_hf_dir(phi3.string());
  EXPECT_FALSE(p.adds_bos());
  EXPECT_EQ(p.token_id("<|end|>"), 32007);
  EXPECT_EQ(p.encode("<|end|>", false, true), std::vector<int32_t>{32007});
  EXPECT_EQ(p.eot_id(), 32007);
  EXPECT_THROW(Tokenizer::from_hf_json("{not json", ""), FormatError);
}

TEST(HfLoader, MergesAsPairsAndIgnoreMerges) {
  const std::string tj = R"({
    "added_tokens": [], "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "abb": 3, "bb": 4}, "merges": [["a", "b"], ["b", "b"]],
              "ignore_merges": IGNORE}
  })";
  auto with = [&](const char* v) {
    std::string s = tj;
    s.replace(s.find("IGNORE"), 6, v);
    return Tokenizer::from_hf_json(s, "");
  };
  // "abb": merges give ab + b (rank 0 first); ignore_merges takes the whole-word token.
  EXPECT_EQ(with("false").encode("abb", false, false), (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(with("true").encode("abb", false, false), (std::vector<int32_t>{3}));
}


}  // namespace
}  // namespace lemma

namespace lemma {
namespace {

TEST(HfLoader, ConfigAddPrefixSpaceRebuildsByteLevel) {
  const auto dir = testing::shared_data("hf/gpt2");
  LEMMA_REQUIRE_SHARED(dir / "tokenizer.json");
  const std::string tj = testing::read_file(dir / "tokenizer.json");
  const Tokenizer plain = Tokenizer::from_hf_json(tj, R"({"add_prefix_space": false})");
  const Tokenizer prefixed = Tokenizer::from_hf_json(tj, R"({"add_prefix_space": true})");
  EXPECT_EQ(plain.encode("Hello", false, false), std::vector<int32_t>{15496});    // "Hello"
  EXPECT_EQ(prefixed.encode("Hello", false, false), std::vector<int32_t>{18435});  // "ĠHello"
}

}  // namespace
}  // namespace lemma
