// StreamingDetokenizer: pushing ids one at a time must reproduce decode() exactly and never
// return a partial UTF-8 sequence.
#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "golden_util.h"
#include "lemma/base/error.h"
#include "lemma/tokenizer/streaming.h"
#include "lemma/tokenizer/tokenizer.h"
#include "lemma/tokenizer/utf8.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

using json = nlohmann::json;

bool valid_utf8(const std::string& s) { return tok::sanitize_utf8(s) == s; }

void check_streaming(const Tokenizer& tok) {
  const json inputs = json::parse(testing::read_file(testing::shared_data("hf/multilingual_inputs_pr357.json")));
  size_t checked = 0;
  for (const auto& in : inputs.at("inputs")) {
    const std::string text = in.at("text");
    const auto ids = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
    StreamingDetokenizer stream(tok, /*skip_special=*/true);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = stream.push(id);
      EXPECT_TRUE(valid_utf8(piece)) << "partial UTF-8 emitted for " << testing::escaped(text);
      streamed += piece;
    }
    streamed += stream.flush();
    // Streaming never applies clean_up_tokenization_spaces (it would rewrite emitted text).
    EXPECT_EQ(streamed, tok.decode(ids, /*skip_special=*/true, /*clean_up_spaces=*/false)) << testing::escaped(text);
    ++checked;
  }
  EXPECT_GT(checked, 10u);
}

TEST(StreamingDetokenizer, Gpt2MatchesDecode) {
  LEMMA_REQUIRE_SHARED(testing::shared_data("hf/gpt2/tokenizer.json"));
  check_streaming(Tokenizer::from_hf_dir(testing::shared_data("hf/gpt2").string()));
}

TEST(StreamingDetokenizer, Llama2ByteFallbackMatchesDecode) {
  LEMMA_REQUIRE_SHARED(testing::shared_data("hf/llama2-spm/tokenizer.json"));
  check_streaming(Tokenizer::from_hf_dir(testing::shared_data("hf/llama2-spm").string()));
}

TEST(StreamingDetokenizer, ByteTokensWaitForWholeCodePoint) {
  LEMMA_REQUIRE_SHARED(testing::shared_data("hf/llama2-spm/tokenizer.json"));
  const Tokenizer tok = Tokenizer::from_hf_dir(testing::shared_data("hf/llama2-spm").string());
  // "€" = E2 82 AC, spelled with byte-fallback tokens after "▁a".
  const auto a = tok.token_id("\xe2\x96\x81" "a");
  const auto b0 = tok.token_id("<0xE2>"), b1 = tok.token_id("<0x82>"), b2 = tok.token_id("<0xAC>");
  ASSERT_TRUE(a && b0 && b1 && b2);
  StreamingDetokenizer stream(tok);
  EXPECT_EQ(stream.push(*a), "a");  // leading dummy-prefix space dropped, as decode() does
  EXPECT_EQ(stream.push(*b0), "");
  EXPECT_EQ(stream.push(*b1), "");
  EXPECT_EQ(stream.push(*b2), "\xe2\x82\xac");
  EXPECT_EQ(stream.push(*a), " a");  // later "▁" keeps its space
  EXPECT_EQ(stream.push(*b0), "");
  EXPECT_THROW(stream.push(tok.vocab_size()), InvalidArgument);  // rejected, stream unchanged
  EXPECT_EQ(stream.flush(), "\xef\xbf\xbd");  // a dangling byte becomes U+FFFD

  // A primed stream continues a prompt: the first "▁a" keeps its space.
  StreamingDetokenizer primed(tok);
  primed.prime(tok.encode("Hello", true, false));
  EXPECT_EQ(primed.push(*a), " a");
  StreamingDetokenizer fresh(tok);
  EXPECT_EQ(fresh.push(*a), "a");
}

}  // namespace
}  // namespace lemma

namespace lemma {
namespace {

// A skipped special token in mid-stream must not make the next "▁word" lose its space.
TEST(StreamingDetokenizer, SkippedSpecialKeepsFollowingSpace) {
  LEMMA_REQUIRE_SHARED(testing::shared_data("hf/phi-3-mini/tokenizer.json"));
  const Tokenizer tok = Tokenizer::from_hf_dir(testing::shared_data("hf/phi-3-mini").string());
  const auto ids = tok.encode("Hi there<|end|> again and<|assistant|> more", false, true);
  ASSERT_TRUE(std::find(ids.begin(), ids.end(), 32007) != ids.end());
  StreamingDetokenizer stream(tok, /*skip_special=*/true);
  std::string text;
  for (int32_t id : ids) text += stream.push(id);
  text += stream.flush();
  EXPECT_EQ(text, tok.decode(ids, /*skip_special=*/true));
}

}  // namespace
}  // namespace lemma
