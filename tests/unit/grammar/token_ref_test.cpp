// Token references in grammars (llama.cpp's GBNF `<[id]>`, `!<[id]>`, `<text>`): parsing and its
// errors, binding names to a vocabulary, masks (named tokens, special ones included; negation),
// tokens read both as bytes and through a token edge, accept/rollback, completion, jump-forward.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lemma/base/error.h"
#include "lemma/grammar/gbnf.h"
#include "lemma/grammar/token_constraint.h"

namespace lemma::grammar {
namespace {

// 0 "a", 1 "b", 2 "ab", 3 <|tool|> (special), 4 </s> (special, end), 5 "x", 6 "<think>" (text),
// 7 "" (control, special), 8 "c".
TokenVocabulary vocab() {
  TokenVocabulary v;
  v.bytes = {"a", "b", "ab", "", "", "x", "<think>", "", "c"};
  v.special.assign(v.bytes.size(), false);
  v.special_text.assign(v.bytes.size(), "");
  v.special[3] = true;
  v.special_text[3] = "<|tool|>";
  v.special[4] = true;
  v.special_text[4] = "</s>";
  v.special[7] = true;
  v.end_ids = {4};
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

struct Matcher {
  explicit Matcher(const std::string& gbnf, bool use_cache = true)
      : index(std::make_shared<const VocabularyIndex>(vocab())),
        grammar(std::make_shared<const Grammar>(resolve_tokens(gbnf_grammar(gbnf), index->vocab))),
        states(grammar),
        m(states, index->vocab, index->trie, use_cache ? &cache : nullptr) {}
  // The ids the mask allows.
  std::vector<int32_t> allowed() {
    const TokenMask& mask = m.next_mask();
    std::vector<int32_t> out;
    for (int32_t id = 0; id < index->vocab.size(); ++id) {
      if (mask_allows(mask, id)) out.push_back(id);
    }
    return out;
  }
  // The ids accept() takes (each undone again): what the mask must equal.
  std::vector<int32_t> acceptable() {
    std::vector<int32_t> out;
    for (int32_t id = 0; id < index->vocab.size(); ++id) {
      if (m.accept(id)) {
        out.push_back(id);
        m.rollback(1);
      }
    }
    return out;
  }
  std::shared_ptr<const VocabularyIndex> index;
  std::shared_ptr<const Grammar> grammar;
  ParserStates states;
  MaskCache cache;
  TokenMatcher m;
};

using Ids = std::vector<int32_t>;

TEST(TokenRefs, GbnfParsesIdsNamesAndNegations) {
  const Grammar g = gbnf_grammar("root ::= <[5]> !<[1]>* <|tool|> !<think> x\nx ::= \"a\" | <[0]>{2}");
  ASSERT_EQ(g.token_refs().size(), 6u);  // <[0]>{2} is two references
  EXPECT_EQ(g.token_refs()[0].id, 5);
  EXPECT_EQ(g.token_refs()[1].id, 1);
  EXPECT_EQ(g.token_refs()[2].name, "<|tool|>");
  EXPECT_EQ(g.token_refs()[2].id, -1);  // until resolved
  EXPECT_EQ(g.token_refs()[3].name, "<think>");
  const Grammar r = resolve_tokens(g, vocab());
  EXPECT_EQ(r.token_refs()[2].id, 3);  // the special token of that text
  EXPECT_EQ(r.token_refs()[3].id, 6);  // a text token spelling it
  EXPECT_TRUE(gbnf_grammar("root ::= \"a\"").token_refs().empty());
}

TEST(TokenRefs, GbnfErrorsNameLineAndColumn) {
  const auto gbnf_error = [](const std::string& text) { return error_of([&] { gbnf_grammar(text); }); };
  EXPECT_NE(gbnf_error("root ::= <[12x]>").find("line 1, column 14: expected ']>'"), std::string::npos)
      << gbnf_error("root ::= <[12x]>");
  EXPECT_NE(gbnf_error("root ::= \"a\"\nb ::= <[]>").find("line 2, column 9: expected a token id"), std::string::npos)
      << gbnf_error("root ::= \"a\"\nb ::= <[]>");
  EXPECT_NE(gbnf_error("root ::= !x").find("line 1, column 11: expected '<' after '!'"), std::string::npos)
      << gbnf_error("root ::= !x");
  EXPECT_NE(gbnf_error("root ::= <|tool|\n").find("line 1, column 17: expected '>' to close the token at line 1, column 10"),
            std::string::npos)
      << gbnf_error("root ::= <|tool|\n");
  EXPECT_NE(gbnf_error("root ::= <>").find("line 1, column 10: empty token"), std::string::npos) << gbnf_error("root ::= <>");
  EXPECT_NE(gbnf_error("root ::= <[99999999999]>").find("line 1, column 12: token id too large"), std::string::npos);
}

TEST(TokenRefs, ResolvingNamesAnUnknownTokenAndChecksIds) {
  const std::string unknown = error_of([] { resolve_tokens(gbnf_grammar("root ::= <|nope|>"), vocab()); });
  EXPECT_NE(unknown.find("'<|nope|>'"), std::string::npos) << unknown;
  const std::string range = error_of([] { resolve_tokens(gbnf_grammar("root ::= <[9]>"), vocab()); });
  EXPECT_NE(range.find("token id 9 is outside the vocabulary (9 tokens)"), std::string::npos) << range;
  // The engine's per-sequence state refuses a grammar whose names were never bound.
  TokenConstraint c{std::make_shared<const Grammar>(gbnf_grammar("root ::= <|tool|>")),
                    std::make_shared<const VocabularyIndex>(vocab()), "test"};
  EXPECT_NE(error_of([&] { ConstraintState s(c); }).find("'<|tool|>' was never resolved"), std::string::npos);
  c.grammar = std::make_shared<const Grammar>(resolve_tokens(*c.grammar, c.vocabulary->vocab));
  ConstraintState s(c);
  EXPECT_EQ(mask_allows(s.allowed(), 3), true);
}

TEST(TokenRefs, ATokenIdAllowsOnlyThatTokenThenBytesFollow) {
  Matcher t("root ::= <[5]> \"a\"");
  EXPECT_EQ(t.allowed(), Ids({5}));
  EXPECT_EQ(t.acceptable(), Ids({5}));
  EXPECT_FALSE(t.m.is_complete());
  ASSERT_TRUE(t.m.accept(5));
  EXPECT_EQ(t.allowed(), Ids({0}));  // the tokens spelling "a"
  ASSERT_TRUE(t.m.accept(0));
  EXPECT_TRUE(t.m.is_complete());
  EXPECT_EQ(t.allowed(), Ids({4}));  // the end id
  EXPECT_EQ(t.acceptable(), Ids({4}));
  // Its text does not stand in for it: "x" as bytes is not token 5.
  Matcher bytes("root ::= \"x\" | <[0]>");
  EXPECT_EQ(bytes.allowed(), Ids({0, 5}));
}

TEST(TokenRefs, NamedSpecialTokenIsAllowedOnlyWhereNamed) {
  Matcher t("root ::= <|tool|> \"ab\" | \"c\"");
  EXPECT_EQ(t.allowed(), Ids({3, 8}));
  EXPECT_EQ(t.acceptable(), Ids({3, 8}));
  ASSERT_TRUE(t.m.accept(3));
  EXPECT_EQ(t.allowed(), Ids({0, 2}));
  EXPECT_FALSE(t.m.accept(3));  // not named here
  EXPECT_FALSE(t.m.accept(7));  // an unnamed control token: never
  ASSERT_TRUE(t.m.accept(2));
  EXPECT_TRUE(t.m.is_complete());
  EXPECT_TRUE(t.m.is_finished());
}

TEST(TokenRefs, NegationTakesAnyTextTokenButTheOne) {
  Matcher t("root ::= !<[1]>");
  EXPECT_EQ(t.allowed(), Ids({0, 2, 5, 6, 8}));  // not 1; no special token, no end id
  EXPECT_EQ(t.acceptable(), t.allowed());
  Matcher loop("root ::= !<[1]>* <[1]>");
  EXPECT_EQ(loop.allowed(), Ids({0, 1, 2, 5, 6, 8}));
  for (int32_t id : {2, 6, 0}) ASSERT_TRUE(loop.m.accept(id));
  EXPECT_FALSE(loop.m.accept(3));
  EXPECT_FALSE(loop.m.accept(4));
  EXPECT_FALSE(loop.m.is_complete());
  ASSERT_TRUE(loop.m.accept(1));
  EXPECT_TRUE(loop.m.is_complete());
  EXPECT_EQ(loop.allowed(), Ids({4}));
  // Two negations together take every text token; a negated name works too.
  Matcher both("root ::= !<[1]> | !<think>");
  EXPECT_EQ(both.allowed(), Ids({0, 1, 2, 5, 6, 8}));
  Matcher byname("root ::= !<think> | \"<think>\"");
  EXPECT_EQ(byname.allowed(), Ids({0, 1, 2, 5, 6, 8}));  // 6 as bytes
  EXPECT_EQ(byname.acceptable(), byname.allowed());
}

TEST(TokenRefs, ATokenReadBothAsBytesAndWholeKeepsBothWays) {
  Matcher t("root ::= <[0]> \"x\" | \"a\" \"b\" | \"ab\" \"c\"");
  EXPECT_EQ(t.allowed(), Ids({0, 2}));
  ASSERT_TRUE(t.m.accept(0));             // token 0 whole, and "a" as bytes
  EXPECT_EQ(t.allowed(), Ids({1, 5}));    // "x" after the token, "b" after the byte
  EXPECT_EQ(t.acceptable(), t.allowed());
  ASSERT_TRUE(t.m.accept(5));
  EXPECT_TRUE(t.m.is_complete());
  t.m.rollback(1);
  ASSERT_TRUE(t.m.accept(1));
  EXPECT_TRUE(t.m.is_complete());
}

TEST(TokenRefs, RollbackAcrossTokenEdgesAndCachedMasksAgree) {
  for (bool cached : {true, false}) {
    Matcher t("root ::= (<|tool|> \"a\"+ \"b\")+", cached);
    const Ids start = t.allowed();
    EXPECT_EQ(start, Ids({3}));
    ASSERT_TRUE(t.m.accept(3));
    const Ids after_tool = t.allowed();
    EXPECT_EQ(after_tool, Ids({0, 2}));
    ASSERT_TRUE(t.m.accept(0));
    ASSERT_TRUE(t.m.accept(2));
    EXPECT_TRUE(t.m.is_complete());
    EXPECT_EQ(t.allowed(), Ids({3, 4}));
    ASSERT_TRUE(t.m.accept(3));
    EXPECT_EQ(t.m.tokens_accepted(), 4u);
    t.m.rollback(3);
    EXPECT_EQ(t.allowed(), after_tool);
    EXPECT_EQ(t.acceptable(), after_tool);
    t.m.rollback(1);
    EXPECT_EQ(t.allowed(), start);
    EXPECT_THROW(t.m.rollback(1), InvalidArgument);
  }
}

TEST(TokenRefs, CompletionEndsAndJumpForwardStopAtTokenEdges) {
  Matcher t("root ::= \"ab\" <[5]> \"c\" <[8]>?");
  EXPECT_EQ(t.m.forced_bytes(16), "ab");
  ASSERT_TRUE(t.m.accept(2));
  EXPECT_EQ(t.m.forced_bytes(16), "");  // a token comes next, not bytes
  ASSERT_TRUE(t.m.accept(5));
  EXPECT_EQ(t.m.forced_bytes(16), "c");
  ASSERT_TRUE(t.m.accept(8));
  EXPECT_TRUE(t.m.is_complete());
  EXPECT_FALSE(t.m.is_finished());  // token 8 may still come
  EXPECT_EQ(t.allowed(), Ids({4, 8}));
  ASSERT_TRUE(t.m.accept(8));
  EXPECT_TRUE(t.m.is_finished());
  // An end id named by the grammar is read through its edge.
  Matcher eos("root ::= \"a\" </s> \"b\"");
  ASSERT_TRUE(eos.m.accept(0));
  EXPECT_EQ(eos.allowed(), Ids({4}));
  ASSERT_TRUE(eos.m.accept(4));
  EXPECT_FALSE(eos.m.is_finished());
  EXPECT_EQ(eos.allowed(), Ids({1}));
}

}  // namespace
}  // namespace lemma::grammar
