// Regex -> grammar: the JSON Schema pattern subset, whole-text and search semantics.
#include <gtest/gtest.h>

#include "grammar_test_util.h"
#include "lemma/base/error.h"

namespace lemma::grammar::testing {
namespace {

bool full_match(const std::string& pattern, const std::string& text) { return grammar_accepts(regex_grammar(pattern), text); }

TEST(RegexGrammar, ClassesQuantifiersAndGroups) {
  EXPECT_TRUE(full_match("a(b|cd)*e", "abcdbe"));
  EXPECT_FALSE(full_match("a(b|cd)*e", "ace"));
  EXPECT_TRUE(full_match("[A-Z][a-z0-9_]{2,4}", "Ab_9"));
  EXPECT_FALSE(full_match("[A-Z][a-z0-9_]{2,4}", "Ab"));
  EXPECT_FALSE(full_match("[A-Z][a-z0-9_]{2,4}", "Abcdef"));
  EXPECT_TRUE(full_match("[^abc]+", "xyz\xC3\xA9"));
  EXPECT_FALSE(full_match("[^abc]+", "xaz"));
  EXPECT_TRUE(full_match("\\d+\\.\\d?", "12."));
  EXPECT_TRUE(full_match("(?:ab)+?", "abab"));
  EXPECT_TRUE(full_match("\\w\\s\\W", "a \xE2\x82\xAC"));
  EXPECT_TRUE(full_match(".", "\xF0\x9F\x98\x80"));
  EXPECT_FALSE(full_match(".", "\n"));
  EXPECT_TRUE(full_match("a{2}", "aa"));
  EXPECT_TRUE(full_match("x{,2}", "x{,2}"));  // not a quantifier: literal text (Annex B)
}

TEST(RegexGrammar, SearchSemanticsFollowAnchors) {
  EXPECT_TRUE(grammar_accepts(regex_grammar("b", true), "abc"));
  EXPECT_TRUE(grammar_accepts(regex_grammar("^a", true), "abc"));
  EXPECT_FALSE(grammar_accepts(regex_grammar("^b", true), "abc"));
  EXPECT_FALSE(grammar_accepts(regex_grammar("b$", true), "abc"));
  EXPECT_TRUE(grammar_accepts(regex_grammar("^a$|c$", true), "abc"));
}

TEST(RegexGrammar, UnsupportedConstructsAreNamed) {
  for (const char* p : {"(?=a)", "\\1", "a\\bc", "\\p{L}", "a^b"}) {
    EXPECT_THROW(regex_grammar(p), Unsupported) << p;
  }
}

}  // namespace
}  // namespace lemma::grammar::testing
