// Byte automata against the recognizer on the same expressions: the DFA of a regex accepts what
// the grammar accepts; products tell keys apart by which parts accept; product_expr keeps only
// states that can still reach a kept one.
#include <gtest/gtest.h>

#include <random>

#include "grammar_test_util.h"
#include "lemma/base/error.h"
#include "lemma/grammar/byte_dfa.h"
#include "lemma/grammar/key_automaton.h"

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

// plain_key_not_in against its definition on random byte strings (valid and broken UTF-8):
// accepted exactly when the text is valid UTF-8 of characters >= U+0020 other than '"' and '\\',
// and is none of the names.
bool plain_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      if (b < 0x20 || b == '"' || b == '\\') return false;
      ++i;
      continue;
    }
    if (b < 0xC2 || b > 0xF4) return false;
    const size_t n = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
    if (i + n >= s.size()) return false;
    uint32_t c = b & (n == 1 ? 0x1F : n == 2 ? 0x0F : 0x07);
    for (size_t k = 1; k <= n; ++k) {
      const auto x = static_cast<unsigned char>(s[i + k]);
      if ((x & 0xC0) != 0x80) return false;
      c = (c << 6) | (x & 0x3F);
    }
    if ((n == 2 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) || (n == 3 && (c < 0x10000 || c > 0x10FFFF))) return false;
    i += n + 1;
  }
  return true;
}

TEST(KeyAutomaton, AcceptsExactlyThePlainKeysThatAreNotNames) {
  const std::set<std::string> names = {"id", "idx", "name", "caf\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80s", "a\"b"};
  ParserStates states(std::make_shared<const Grammar>(grammar_of(automaton(plain_key_not_in(names)))));
  const std::vector<std::string> pieces = {"i", "d", "x", "n", "a", "me", "caf", "\xC3\xA9", "\xC3", "\xA9", "\xE2\x82\xAC", "\xE2\x82",
                                           "\xE0\x80\x80", "\xED\xA0\x80", "\xF0\x9F\x98\x80", "\xF4\x90\x80\x80", "s", "\"", "\\", "\x1F", "\x80", " "};
  std::mt19937 rng(11);
  for (int i = 0; i < 4000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) text += pieces[rng() % pieces.size()];
    Recognizer r(states);
    const bool accepted = r.feed(text) && r.accepting();
    EXPECT_EQ(accepted, plain_utf8(text) && !names.count(text)) << ::testing::PrintToString(text);
  }
  for (const auto& name : names) {
    Recognizer r(states);
    EXPECT_FALSE(r.feed(name) && r.accepting()) << name;
  }
}

}  // namespace
}  // namespace lemma::grammar::testing
