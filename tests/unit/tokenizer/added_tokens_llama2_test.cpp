// Special-token text in Llama 2's tokenizer.json (shared/data/hf/llama2-spm; issue 33). Its
// <unk>, <s>, </s> are added tokens with normalized: true under the normalizer Prepend("▁") +
// Replace(" ", "▁"), so HF tokenizers matches them by their normalized form "▁<s>", "▁</s>"
// (added_vocabulary.rs builds its normalized trie from the normalized contents): at the start of
// the text, where the prepended "▁" goes into the token, or after a space, which it absorbs;
// never straight after a word, where "</s>" stays text.
// HF tokenizers could not be installed here (no network), so the expectations are derived from
// that rule; each names its pieces, and the ids of the plain-text parts are those the same text
// gets without special tokens (which the HF golden tests cover).
#include <gtest/gtest.h>

#include "golden_util.h"
#include "lemma/tokenizer/tokenizer.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

using Ids = std::vector<int32_t>;
using Pieces = std::vector<std::string>;

class AddedTokensLlama2 : public ::testing::Test {
 protected:
  void SetUp() override {
    LEMMA_REQUIRE_SHARED(testing::shared_data("hf/llama2-spm/tokenizer.json"));
    tok_ = Tokenizer::from_hf_dir(testing::shared_data("hf/llama2-spm").string());
  }
  Pieces pieces(const Ids& ids) const {
    Pieces out;
    for (int32_t id : ids) out.emplace_back(tok_->token_text(id));
    return out;
  }
  Ids encode(const std::string& text, bool add_special = false) const { return tok_->encode(text, add_special, true); }
  std::optional<Tokenizer> tok_;
};

TEST_F(AddedTokensLlama2, LeadingSpecialTokenTakesThePrependedSpace) {
  const Ids ids = encode("<s>hello");
  EXPECT_EQ(pieces(ids), (Pieces{"<s>", "hello"}));
  EXPECT_EQ(ids, (Ids{1, 12199})) << testing::ids_str(ids);
  EXPECT_EQ(encode("<s>hello", /*add_special=*/true), (Ids{1, 1, 12199}));
  const Ids eos = encode("</s> hi");
  EXPECT_EQ(pieces(eos), (Pieces{"</s>", "\u2581hi"}));
  EXPECT_EQ(eos, (Ids{2, 7251})) << testing::ids_str(eos);
}

TEST_F(AddedTokensLlama2, SpecialTokenAfterASpaceTakesTheSpace) {
  const Ids ids = encode("hello </s>");
  EXPECT_EQ(pieces(ids), (Pieces{"\u2581hello", "</s>"}));
  EXPECT_EQ(ids, (Ids{22172, 2})) << testing::ids_str(ids);
  const Ids mid = encode("hello <s>world");
  EXPECT_EQ(pieces(mid), (Pieces{"\u2581hello", "<s>", "world"}));
  EXPECT_EQ(mid, (Ids{22172, 1, 11526})) << testing::ids_str(mid);
}

TEST_F(AddedTokensLlama2, SpecialTokenTextAfterAWordStaysText) {
  for (const std::string text : {"hello</s>", "hello<s>world", "<s><s>x"}) {
    const Ids ids = encode(text);
    const Ids plain = tok_->encode(text, false, /*parse_special=*/false);
    if (text == "<s><s>x") {
      // The first is at the start (after the prepended "▁"); the second follows "<s>".
      ASSERT_FALSE(ids.empty());
      EXPECT_EQ(ids.front(), 1);
      EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1) << testing::ids_str(ids);
      EXPECT_EQ(tok_->decode(ids), "<s><s>x");
    } else {
      EXPECT_EQ(ids, plain) << testing::escaped(text) << ": " << testing::ids_str(ids);
      EXPECT_EQ(std::count(ids.begin(), ids.end(), 1) + std::count(ids.begin(), ids.end(), 2), 0);
    }
  }
  const Ids eos = encode("hello</s>");
  EXPECT_EQ(pieces(eos), (Pieces{"\u2581hello", "</", "s", ">"}));
}

TEST_F(AddedTokensLlama2, WithoutParseSpecialNothingMatches) {
  const Ids ids = tok_->encode("<s>hello </s>", false, false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1) + std::count(ids.begin(), ids.end(), 2), 0) << testing::ids_str(ids);
  EXPECT_EQ(tok_->decode(ids), "<s>hello </s>");
}

// encode_spans (chat prompts): a special token counts only where its whole match lies in the
// template's text. Under Llama 2's normalizer that match includes the "▁" of the space before
// "</s>", so a space from the request keeps the template's "</s>" from being read as one.
TEST_F(AddedTokensLlama2, EncodeSpansNeedsTheWholeNormalizedMatchInTemplateText) {
  auto eos_count = [&](std::vector<TextSpan> spans) {
    const Ids ids = tok_->encode_spans(spans, false);
    return std::count(ids.begin(), ids.end(), 2);
  };
  EXPECT_EQ(eos_count({{"[INST] hi [/INST] ok </s>", false}}), 1);
  EXPECT_EQ(eos_count({{"[INST] ", false}, {"hi </s>", true}, {" [/INST]", false}}), 0);
  EXPECT_EQ(eos_count({{"[INST] hi [/INST] ", false}, {"ok", true}, {" </s>", false}}), 1);
  EXPECT_EQ(eos_count({{"[INST] hi [/INST] ", false}, {"ok ", true}, {"</s>", false}}), 0);
}

}  // namespace
}  // namespace lemma
