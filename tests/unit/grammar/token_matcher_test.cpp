// Token masks against brute force (a token is allowed iff the recognizer can feed its bytes),
// tokens spanning several grammar symbols and partial UTF-8, rollback of N tokens, and EOS.
#include <gtest/gtest.h>

#include "grammar_test_util.h"
#include "lemma/base/error.h"
#include "lemma/grammar/token_matcher.h"

namespace lemma::grammar::testing {
namespace {

TokenVocabulary small_vocab() {
  TokenVocabulary v;
  v.bytes = {"{", "}", "\"", "a", "b", "\"a", "\": ", ": ", ", ", " ", "1", "12", "-", "\xC3", "\xA9", "\xC3\xA9",
             "\"}", "true", "tr", "ue", "{\"", "\"a\": 1}", "", "xyz", "", "null"};
  v.special.assign(v.bytes.size(), false);
  v.special[22] = true;  // a control token: never allowed
  v.end_ids = {24};
  v.special[24] = true;
  return v;
}

const char* kSchema = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]})";

TEST(TokenMatcher, MaskEqualsBruteForceAlongAText) {
  const TokenVocabulary vocab = small_vocab();
  const TokenTrie trie(vocab);
  ParserStates states(std::make_shared<const Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(kSchema))));
  TokenMatcher m(states, vocab, trie, nullptr);
  Recognizer brute(states);
  const std::vector<int32_t> text = {20, 3, 6, 10, 8, 2, 4, 6, 2, 13, 14, 15, 16};  // {"a": 1, "b": "éé"}
  for (size_t step = 0; step <= text.size(); ++step) {
    const TokenMask mask = m.next_mask();
    for (int32_t id = 0; id < vocab.size(); ++id) {
      bool expected = !vocab.special[static_cast<size_t>(id)] && !vocab.bytes[static_cast<size_t>(id)].empty() &&
                      brute.can_feed(vocab.bytes[static_cast<size_t>(id)]);
      if (id == 24) expected = brute.accepting();
      EXPECT_EQ(mask_allows(mask, id), expected) << "step " << step << " token " << id;
    }
    if (step == text.size()) break;
    ASSERT_TRUE(m.accept(text[step])) << step;
    ASSERT_TRUE(brute.feed(vocab.bytes[static_cast<size_t>(text[step])]));
  }
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.accept(24));
  EXPECT_TRUE(m.is_finished());
}

TEST(TokenMatcher, RollbackUndoesTokensAndCachedMasksAgree) {
  const TokenVocabulary vocab = small_vocab();
  const TokenTrie trie(vocab);
  ParserStates states(std::make_shared<const Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(kSchema))));
  MaskCache cache;
  TokenMatcher m(states, vocab, trie, &cache);
  const TokenMask at_start = m.next_mask();
  EXPECT_FALSE(m.accept(1));   // "}" first: refused, nothing changes
  EXPECT_FALSE(m.accept(22));  // special
  EXPECT_FALSE(m.accept(24));  // EOS before completion
  ASSERT_TRUE(m.accept(0));
  ASSERT_TRUE(m.accept(2));
  ASSERT_TRUE(m.accept(3));
  const TokenMask after_a = m.next_mask();
  ASSERT_TRUE(m.accept(6));
  ASSERT_TRUE(m.accept(11));
  EXPECT_EQ(m.tokens_accepted(), 5u);
  m.rollback(2);
  EXPECT_EQ(m.next_mask(), after_a);
  m.rollback(3);
  EXPECT_EQ(m.next_mask(), at_start);
  EXPECT_THROW(m.rollback(1), InvalidArgument);
  ASSERT_TRUE(m.accept(0));
  ASSERT_TRUE(m.accept(21));  // one token covering several grammar symbols
  EXPECT_TRUE(m.is_complete());
  ASSERT_TRUE(m.accept(24));
  m.rollback(1);  // speculation may undo the end too
  EXPECT_FALSE(m.is_finished());
}

}  // namespace
}  // namespace lemma::grammar::testing
