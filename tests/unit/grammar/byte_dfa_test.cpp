// Byte automata against the recognizer on the same expressions: the DFA of a regex accepts what
// the grammar accepts; products tell keys apart by which parts accept; product_expr keeps only
// states that can still reach a kept one.
#include <gtest/gtest.h>

#include <random>

#include "grammar_test_util.h"
#include "lemma/base/error.h"
#include "lemma/grammar/byte_dfa.h"

namespace lemma::grammar::testing {
namespace {

ExprPtr regex(const std::string& pattern, bool search) {
  return regex_to_expr(pattern, [](const CharClass& c) { return utf8_expr(c); }, search);
}

Grammar grammar_of(ExprPtr e) {
  GrammarBuilder b;
  const int root = b.declare("root");
  b.define(root, std::move(e));
  return b.build(root);
}

TEST(ByteDfa, AgreesWithTheRecognizerOnRandomTexts) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab01-_.x\xC3\xA9";
  for (const char* pattern : {"^[a-z_]+$", "^x-", "a.*b", "^(ab|a)(0|1){2,3}$", "^[^-]+$", "é$", "^$"}) {
    const ByteDfa dfa = ByteDfa::from_expr(regex(pattern, true), 1000);
    for (int i = 0; i < 400; ++i) {
      std::string text;
      const int n = static_cast<int>(rng() % 7);
      for (int k = 0; k < n; ++k) text += alphabet[rng() % alphabet.size()];
      EXPECT_EQ(dfa.matches(text), grammar_accepts(grammar_of(regex(pattern, true)), text)) << pattern << " on " << text;
    }
  }
}

TEST(ByteDfa, RefusesToGrowPastItsStateBound) {
  EXPECT_THROW(ByteDfa::from_expr(regex("^[ab]{0,50}c[ab]{0,50}$", false), 20), Unsupported);
}

TEST(ByteDfa, ProductSignaturesAndComplement) {
  const ByteDfa universe = ByteDfa::from_expr(star(byte_range('a', 'c')), 100);
  const ByteDfa has_a = ByteDfa::from_expr(regex("a", true), 100);
  const ByteDfa ends_c = ByteDfa::from_expr(regex("c$", true), 100);
  const DfaProduct p = dfa_product({&universe, &has_a, &ends_c}, 100);
  // Strings of a-c with no 'a' that do not end in 'c': universe accepts, neither pattern does.
  const ExprPtr neither = product_expr(p, [](uint64_t sig) { return sig == 1; });
  const Grammar g = grammar_of(neither);
  EXPECT_TRUE(grammar_accepts(g, ""));
  EXPECT_TRUE(grammar_accepts(g, "bcb"));
  EXPECT_FALSE(grammar_accepts(g, "bc"));
  EXPECT_FALSE(grammar_accepts(g, "ba"));
  EXPECT_FALSE(grammar_accepts(g, "d"));  // outside the universe
  // Strings with an 'a' that end in 'c'.
  const Grammar both = grammar_of(product_expr(p, [](uint64_t sig) { return sig == 7; }));
  EXPECT_TRUE(grammar_accepts(both, "bac"));
  EXPECT_FALSE(grammar_accepts(both, "ab"));
}

TEST(ByteDfa, DeadEndsAreLeftOut) {
  // Keep only "ab": the state after "b" (which can never reach "ab") must not be readable.
  const ByteDfa universe = ByteDfa::from_expr(star(byte_range('a', 'b')), 100);
  const ByteDfa ab = ByteDfa::from_expr(literal("ab"), 100);
  const DfaProduct p = dfa_product({&universe, &ab}, 100);
  ParserStates states(std::make_shared<const Grammar>(grammar_of(product_expr(p, [](uint64_t sig) { return sig == 3; }))));
  Recognizer r(states);
  EXPECT_FALSE(r.can_feed("b"));
  EXPECT_TRUE(r.feed("a"));
  EXPECT_FALSE(r.can_feed("a"));
  EXPECT_TRUE(r.feed("b"));
  EXPECT_TRUE(r.accepting());
}

}  // namespace
}  // namespace lemma::grammar::testing
