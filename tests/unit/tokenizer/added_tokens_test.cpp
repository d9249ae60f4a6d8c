// Added-token matching on hand-made tokenizer.json files, one flag at a time, against the rule
// of HF tokenizers' added_vocabulary.rs (find_matches / extract_and_normalize): raw tokens
// before the normalizer, normalized ones by their normalized form in each normalized piece,
// leftmost-longest without overlap, a refused match passed over whole, lstrip/rstrip swallowing
// Unicode White_Space, single_word refusing a neighbouring \w character.
// The vocabularies are single characters with no merges, so every expected id is one character
// or one added token and can be checked by eye: a=0 b=1 space=2 ▁=3 [UNK]=4 (any other
// character, e.g. the "<", ">" of a token left as text).
#include <gtest/gtest.h>

#include "lemma/tokenizer/tokenizer.h"

namespace lemma {
namespace {

using Ids = std::vector<int32_t>;

// A tokenizer.json with the given added tokens (comma-separated JSON objects; flags left out
// are false), normalizer and pre-tokenizer.
Tokenizer make(const std::string& added_tokens, const std::string& normalizer = "null",
               const std::string& pre_tokenizer = "null") {
  return Tokenizer::from_hf_json(R"({"added_tokens": [)" + added_tokens + R"(],
    "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer + R"(,
    "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, " ": 2, "\u2581": 3, "[UNK]": 4}, "merges": [],
              "unk_token": "[UNK]"}})",
                                 "");
}

std::string token(int id, const std::string& content, const std::string& flags) {
  return R"({"id": )" + std::to_string(id) + R"(, "content": ")" + content + R"(", )" + flags + "}";
}

// Special, raw (normalized: false) tokens, one per flag.
Tokenizer flag_tokenizer() {
  return make(token(10, "<L>", R"("special": true, "normalized": false, "lstrip": true)") + "," +
              token(11, "<R>", R"("special": true, "normalized": false, "rstrip": true)") + "," +
              token(12, "<W>", R"("special": true, "normalized": false, "single_word": true)") + "," +
              token(13, "<P>", R"("special": true, "normalized": false)"));
}

TEST(AddedTokens, LstripSwallowsWhitespaceOnTheLeft) {
  const Tokenizer tok = flag_tokenizer();
  EXPECT_EQ(tok.encode("a  <L>b", false, true), (Ids{0, 10, 1}));
  EXPECT_EQ(tok.encode("a\t\n <L>", false, true), (Ids{0, 10}));
  // Unicode White_Space: U+3000 (Zs) and U+0085 (NEL, a control character) count.
  EXPECT_EQ(tok.encode("a\u3000<L>", false, true), (Ids{0, 10}));
  EXPECT_EQ(tok.encode("a\u0085<L>", false, true), (Ids{0, 10}));
  EXPECT_EQ(tok.encode("a<L> b", false, true), (Ids{0, 10, 2, 1})) << "nothing on the right";
  // It reaches back as far as the token before.
  EXPECT_EQ(tok.encode("<P>  <L>", false, true), (Ids{13, 10}));
}

TEST(AddedTokens, RstripSwallowsWhitespaceOnTheRight) {
  const Tokenizer tok = flag_tokenizer();
  EXPECT_EQ(tok.encode("a <R> \t b", false, true), (Ids{0, 2, 11, 1}));
  EXPECT_EQ(tok.encode("<R>\u2003", false, true), (Ids{11}));
  // The spaces between two tokens go to the rstrip one (lstrip stops where it ends).
  EXPECT_EQ(tok.encode("<R>  <L>", false, true), (Ids{11, 10}));
}

TEST(AddedTokens, SingleWordOnlyOutsideWords) {
  const Tokenizer tok = flag_tokenizer();
  EXPECT_EQ(tok.encode("<W>", false, true), (Ids{12}));
  EXPECT_EQ(tok.encode("a <W> b", false, true), (Ids{0, 2, 12, 2, 1}));
  EXPECT_EQ(tok.encode("(<W>)", false, true), (Ids{4, 12, 4}));
  // A word character on either side refuses the match; the text stays text.
  EXPECT_EQ(tok.encode("a<W>", false, true), (Ids{0, 4, 4, 4}));
  EXPECT_EQ(tok.encode("<W>b", false, true), (Ids{4, 4, 4, 1}));
  // Rust's \w: "_" (Pc) and "é" are word characters, "²" (No) is not.
  EXPECT_EQ(tok.encode("_<W>", false, true), (Ids{4, 4, 4, 4}));
  EXPECT_EQ(tok.encode("<W>\u00e9", false, true), (Ids{4, 4, 4, 4}));
  EXPECT_EQ(tok.encode("\u00b2<W>", false, true), (Ids{4, 12}));
}

TEST(AddedTokens, SpecialTokensNeedParseSpecial) {
  const Tokenizer tok = flag_tokenizer();
  EXPECT_EQ(tok.encode("a<P>", false, true), (Ids{0, 13}));
  EXPECT_EQ(tok.encode("a<P>", false, false), (Ids{0, 4, 4, 4}));
  EXPECT_EQ(tok.encode("a  <L>", false, false), (Ids{0, 2, 2, 4, 4, 4})) << "no match, no stripping";
}

// HF walks the leftmost-longest matches without overlap: a refused match is not searched again
// for a token that starts inside it.
TEST(AddedTokens, RefusedMatchIsPassedOverWhole) {
  const Tokenizer tok = make(token(12, "<W>", R"("special": false, "normalized": false, "single_word": true)") + "," +
                             token(13, "<P>", R"("special": true, "normalized": false)") + "," +
                             token(14, "W>b", R"("special": false, "normalized": false)") + "," +
                             token(15, "P>", R"("special": false, "normalized": false)"));
  EXPECT_EQ(tok.encode("a<W>b", false, true), (Ids{0, 4, 4, 4, 1}));
  EXPECT_EQ(tok.encode("<P>", false, false), (Ids{4, 4, 4}));
  EXPECT_EQ(tok.encode("<P>", false, true), (Ids{13}));
  // Where nothing longer starts earlier, the inner tokens match.
  EXPECT_EQ(tok.encode("W>b P>", false, false), (Ids{14, 2, 15}));
}

// HF's rstrip moves only where the text resumes, not where the search does: a token inside the
// swallowed whitespace is still emitted, and the text after it is read from its end.
TEST(AddedTokens, TokenInsideRstrippedWhitespaceFollowsHf) {
  const Tokenizer tok = make(token(11, "<R>", R"("special": true, "normalized": false, "rstrip": true)") + "," +
                             token(16, "\\t", R"("special": false, "normalized": false)"));
  EXPECT_EQ(tok.encode("<R> \t b", false, true), (Ids{11, 16, 2, 1}));
  EXPECT_EQ(tok.encode("<R>  b", false, true), (Ids{11, 1}));
}

// normalized: true tokens are matched in the normalized text by their normalized form;
// normalized: false ones in the raw text before the normalizer runs.
TEST(AddedTokens, NormalizedTokensMatchTheirNormalizedForm) {
  const Tokenizer tok = make(token(20, "[AB]", R"("special": false, "normalized": true)") + "," +
                                 token(21, "[BA]", R"("special": false, "normalized": false)"),
                             R"({"type": "Lowercase"})");
  // "[AB]" is matched as "[ab]": any casing of it in the input lowercases to that.
  EXPECT_EQ(tok.encode("[AB]", false, false), (Ids{20}));
  EXPECT_EQ(tok.encode("[ab]a", false, false), (Ids{20, 0}));
  EXPECT_EQ(tok.encode("[aB]", false, false), (Ids{20}));
  // "[BA]" is matched only as written, before lowercasing.
  EXPECT_EQ(tok.encode("[BA]", false, false), (Ids{21}));
  EXPECT_EQ(tok.encode("[ba]", false, false), (Ids{4, 1, 0, 4}));
}

// Llama 2's normalizer: Prepend("▁") + Replace(" ", "▁"). A normalized token's form gains the
// "▁" (the prefix of the text or a space); a raw token splits the text first and every piece
// after it is normalized, so gets its own "▁", as in HF.
Tokenizer spm_tokenizer() {
  return make(token(30, "<e>", R"("special": true, "normalized": true)") + "," +
                  token(31, "<r>", R"("special": true, "normalized": false)"),
              R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})");
}

TEST(AddedTokens, NormalizedTokenUnderPrependNeedsItsPrefix) {
  const Tokenizer tok = spm_tokenizer();
  EXPECT_EQ(tok.encode("<e>a", false, true), (Ids{30, 0})) << "the prepended ▁ belongs to the token";
  EXPECT_EQ(tok.encode("a <e>", false, true), (Ids{3, 0, 30}));
  EXPECT_EQ(tok.encode("a <e> b", false, true), (Ids{3, 0, 30, 3, 1}));
  EXPECT_EQ(tok.encode("a<e>", false, true), (Ids{3, 0, 4, 4, 4})) << "no ▁ before it: text";
  EXPECT_EQ(tok.encode("<e><e>", false, true), (Ids{30, 4, 4, 4}));
  EXPECT_EQ(tok.encode("  <e>", false, true), (Ids{3, 3, 30}));
}

TEST(AddedTokens, RawTokenUnderPrependSplitsFirst) {
  const Tokenizer tok = spm_tokenizer();
  EXPECT_EQ(tok.encode("<r>a", false, true), (Ids{31, 3, 0}));
  EXPECT_EQ(tok.encode("a<r>b", false, true), (Ids{3, 0, 31, 3, 1}));
  EXPECT_EQ(tok.encode("a <r> b", false, true), (Ids{3, 0, 3, 31, 3, 3, 1}));
}

// Metaspace prepend_scheme "first" prepends only to the piece that starts the input: not after
// a leading token. "always" prepends to every piece.
TEST(AddedTokens, MetaspaceFirstOnlyAtTheStartOfTheInput) {
  const std::string r = token(31, "<r>", R"("special": true, "normalized": false)");
  const Tokenizer first = make(r, "null", R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false})");
  const Tokenizer always = make(r, "null", R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": false})");
  EXPECT_EQ(first.encode("<r>ab", false, true), (Ids{31, 0, 1}));
  EXPECT_EQ(first.encode("ab<r>a b", false, true), (Ids{3, 0, 1, 31, 0, 3, 1}));
  EXPECT_EQ(always.encode("<r>ab", false, true), (Ids{31, 3, 0, 1}));
  EXPECT_EQ(always.encode("ab<r>a", false, true), (Ids{3, 0, 1, 31, 3, 0}));
}

}  // namespace
}  // namespace lemma
