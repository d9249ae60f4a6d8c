// Golden tests from llama.cpp runs on stories260K.gguf (a 512-token SentencePiece vocabulary):
// prompt tokenization with BOS, streamed detokenization of greedy continuations, and the
// tokenization of the 20 KB perplexity input (CRLF line ends, wikitext markup).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "golden_util.h"
#include "gguf_test_reader.h"
#include "lemma/tokenizer/streaming.h"
#include "lemma/tokenizer/tokenizer.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

using json = nlohmann::json;

class Stories260KGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = testing::shared_data("models/stories260K/stories260K.gguf");
    LEMMA_REQUIRE_SHARED(path);
    tok_.emplace(Tokenizer::from_gguf_metadata(testing::GgufTestReader(path.string())));
  }
  std::optional<Tokenizer> tok_;
};

TEST_F(Stories260KGolden, PromptsAndStreamedContinuations) {
  const json j = json::parse(testing::read_file(testing::shared_data("golden/stories260K_greedy.json")));
  size_t cases = 0;
  for (const auto& c : j.at("cases")) {
    ++cases;
    const std::string prompt = c.at("prompt");
    const auto expected = c.at("prompt_tokens").get<std::vector<int32_t>>();
    const auto got = tok_->encode(prompt, /*add_special=*/true, /*parse_special=*/false);
    EXPECT_EQ(got, expected) << "prompt " << testing::escaped(prompt) << "\n expected " << testing::ids_str(expected)
                             << "\n got      " << testing::ids_str(got);
    // The continuation text is llama.cpp's piece concatenation after the prompt: exactly what a
    // stream that already saw the prompt must emit.
    StreamingDetokenizer stream(*tok_);
    for (int32_t id : expected) stream.push(id);
    std::string text;
    for (int32_t id : c.at("continuation_tokens").get<std::vector<int32_t>>()) text += stream.push(id);
    text += stream.flush();
    EXPECT_EQ(text, c.at("continuation_text").get<std::string>()) << "prompt " << testing::escaped(prompt);
    // prime() gives the same result without emitting the prompt.
    StreamingDetokenizer primed(*tok_);
    primed.prime(expected);
    std::string primed_text;
    for (int32_t id : c.at("continuation_tokens").get<std::vector<int32_t>>()) primed_text += primed.push(id);
    primed_text += primed.flush();
    EXPECT_EQ(primed_text, c.at("continuation_text").get<std::string>()) << "primed, prompt " << testing::escaped(prompt);
  }
  EXPECT_EQ(cases, 6u);
}

TEST_F(Stories260KGolden, PerplexityInputTokens) {
  const json j = json::parse(testing::read_file(testing::shared_data("golden/stories260K_perplexity.json")));
  const auto expected = j.at("tokens").get<std::vector<int32_t>>();
  const std::string text = testing::read_file(testing::shared_data("golden/ppl-input.txt"));
  const auto got = tok_->encode(text, /*add_special=*/true, /*parse_special=*/false);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], expected[i]) << "first difference at token " << i;
  }
}

}  // namespace
}  // namespace lemma
