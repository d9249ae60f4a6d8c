// Tokenizer::max_token_bytes(): the lower bound ceil(bytes / max_token_bytes()) on a text's
// token count holds on real tokenizers and awkward texts, and pipelines that can collapse text
// without limit give no bound (0). Also encode_spans' rule for special tokens next to request text.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "lemma/tokenizer/tokenizer.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

size_t lower_bound_tokens(const Tokenizer& tok, const std::string& text) {
  const size_t l = tok.max_token_bytes();
  return (text.size() + l - 1) / l;
}

// Texts that pack many bytes into few tokens: long runs, "▁" runs, multi-byte characters,
// NFC-composable sequences, special-token text.
std::vector<std::string> dense_texts() {
  std::vector<std::string> out = {std::string(5000, ' '), std::string(5000, '='), std::string(5000, '-'),
                                  std::string(4000, '\n'), "", "a"};
  std::string s;
  for (int i = 0; i < 500; ++i) s += "\xE2\x96\x81";  // "▁"
  out.push_back(s);
  s.clear();
  for (int i = 0; i < 500; ++i) s += "e\xCC\x81";  // e + combining acute: NFC joins them
  out.push_back(s);
  s.clear();
  for (int i = 0; i < 300; ++i) s += "\xF0\x9D\x90\x80";  // U+1D400 MATHEMATICAL BOLD CAPITAL A
  out.push_back(s);
  s.clear();
  for (int i = 0; i < 200; ++i) s += "<|im_start|><|endoftext|></s><s>";
  out.push_back(s);
  std::mt19937 rng(7);
  s.clear();
  for (int i = 0; i < 3000; ++i) s += static_cast<char>(rng() % 256);
  out.push_back(s);
  return out;
}

TEST(TokenBound, HoldsForSharedTokenizers) {
  for (const std::string name : {"gpt2", "llama3", "qwen3", "llama2-spm", "phi-3-mini"}) {
    const auto dir = testing::shared_data("hf/" + name);
    if (!std::filesystem::exists(dir)) continue;
    const Tokenizer tok = Tokenizer::from_hf_dir(dir.string());
    if (name == "phi-3-mini") {
      EXPECT_EQ(tok.max_token_bytes(), 0u) << "its rstrip tokens swallow any run of whitespace";
      continue;
    }
    ASSERT_GT(tok.max_token_bytes(), 0u) << name;
    EXPECT_LE(tok.max_token_bytes(), 1024u) << name;
    for (const auto& text : dense_texts()) {
      for (bool parse_special : {false, true}) {
        EXPECT_GE(tok.encode(text, false, parse_special).size(), lower_bound_tokens(tok, text))
            << name << " on " << text.substr(0, 20) << "... (" << text.size() << " bytes)";
      }
    }
  }
}

TEST(TokenBound, NoBoundWhenThePipelineMayDropText) {
  const std::string vocab = R"({"a":0,"b":1,"ab":2,"[UNK]":3})";
  auto with = [&](const std::string& normalizer, const std::string& pre) {
    return Tokenizer::from_hf_json(R"({"model":{"type":"BPE","vocab":)" + vocab + R"(,"merges":["a b"],"unk_token":"[UNK]"},
        "normalizer":)" + normalizer + R"(,"pre_tokenizer":)" + pre + "}", "");
  };
  EXPECT_GT(with("null", "null").max_token_bytes(), 0u);
  EXPECT_EQ(with(R"({"type":"Strip","strip_left":true,"strip_right":true})", "null").max_token_bytes(), 0u);
  EXPECT_EQ(with("null", R"({"type":"WhitespaceSplit"})").max_token_bytes(), 0u);
  EXPECT_EQ(with(R"({"type":"NFKC"})", "null").max_token_bytes(), 4u * 5u);  // "[UNK]" is 5 bytes, x4 for NFKC
}

// A normalized added token is matched by its normalized form, which may stand for more input
// than its content: under Prepend("▁") + Replace(" ", "▁"), "<eeee>" (6 bytes) also takes the
// space before it (" <eeee>", 7 bytes, one token).
TEST(TokenBound, CountsTheNormalizedFormOfAddedTokens) {
  const Tokenizer tok = Tokenizer::from_hf_json(R"({
    "added_tokens": [{"id": 3, "content": "<eeee>", "special": false, "normalized": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "model": {"type": "BPE", "vocab": {"a": 0, "[UNK]": 1, "\u2581": 2}, "merges": [], "unk_token": "[UNK]"}})",
                                                "");
  std::string text;
  for (int i = 0; i < 100; ++i) text += " <eeee>";
  const auto ids = tok.encode(text, false, false);
  std::vector<int32_t> expected(101, 3);
  expected[0] = 2;  // the prepended "▁"; each space then goes into the token after it
  EXPECT_EQ(ids, expected);
  EXPECT_GE(ids.size(), lower_bound_tokens(tok, text)) << "max_token_bytes " << tok.max_token_bytes();
}

TEST(EncodeSpans, SpecialTokenTextIsSpecialOnlyWhollyInTemplateText) {
  const auto dir = testing::shared_data("hf/qwen3");
  LEMMA_REQUIRE_SHARED(dir);
  const Tokenizer tok = Tokenizer::from_hf_dir(dir.string());
  const int32_t im_end = *tok.token_id("<|im_end|>");
  auto count = [&](const std::vector<TextSpan>& spans) {
    auto ids = tok.encode_spans(spans, false);
    return std::count(ids.begin(), ids.end(), im_end);
  };
  EXPECT_EQ(count({{"a<|im_end|>b", false}}), 1);
  EXPECT_EQ(count({{"a<|im_end|>b", true}}), 0);
  EXPECT_EQ(count({{"a<|im_", false}, {"end|>b", true}}), 0) << "straddles a boundary: text";
  EXPECT_EQ(count({{"a<|im_", true}, {"end|>b", false}}), 0);
  EXPECT_EQ(count({{"<|im_end|>", false}, {"<|im_end|>", true}, {"<|im_end|>", false}}), 2);
  // Without special text in request spans, the ids are encode()'s (pieces are not encoded apart).
  const std::string text = "<|im_start|>user\nHello, world! <|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(tok.encode_spans(std::vector<TextSpan>{{"<|im_start|>", false}, {"user", true}, {"\n", false},
                                                   {"Hello, world! ", true}, {"<|im_end|>\n<|im_start|>", false},
                                                   {"assistant", true}, {"\n", false}},
                             false),
            tok.encode(text, false, true));
}

}  // namespace
}  // namespace lemma
