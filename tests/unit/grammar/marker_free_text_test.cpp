// marker_free_text and text_not_starting_with against plain string searches over every string of a
// small alphabet up to length 6, and ComposedGrammarBuilder embedding whole grammars as rules.
#include "lemma/grammar/marker_free_text.h"

#include <gtest/gtest.h>

#include "grammar_test_util.h"
#include "lemma/base/error.h"
#include "lemma/grammar/composed_grammar.h"

namespace lemma::grammar {
namespace {

using testing::grammar_accepts;

Grammar of(ExprPtr e) {
  GrammarBuilder b;
  const int root = b.declare("root");
  b.define(root, std::move(e));
  return b.build(root);
}

// Calls f on every string over `alphabet` of length <= max_length.
template <typename F>
void every_string(const std::string& alphabet, size_t max_length, F f) {
  std::vector<std::string> layer = {""};
  for (size_t len = 0; len <= max_length; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : layer) {
      f(s);
      for (char c : alphabet) next.push_back(s + c);
    }
    layer = std::move(next);
  }
}

TEST(MarkerFreeText, AcceptsExactlyTheTextsWithoutTheMarker) {
  for (const std::string marker : {"<ab>", "<a", "[TC]", "<"}) {
    SCOPED_TRACE(marker);
    const Grammar free = of(marker_free_text(marker));
    const Grammar free_then_marker = of(seq({marker_free_text(marker), literal(marker)}));
    every_string("<ab>x", 6, [&](const std::string& s) {
      EXPECT_EQ(grammar_accepts(free, s), s.find(marker) == std::string::npos) << s;
      // ... followed by the marker: texts whose first occurrence of it is at their very end.
      const bool first_at_end = s.size() >= marker.size() && s.find(marker) == s.size() - marker.size();
      EXPECT_EQ(grammar_accepts(free_then_marker, s), first_at_end) << s;
    });
  }
  EXPECT_THROW(marker_free_text("<a<"), lemma::InvalidArgument);
  EXPECT_THROW(marker_free_text(""), lemma::InvalidArgument);
}

TEST(TextNotStartingWith, RefusesTheTextsThatOpenWithThePrefixAfterWhiteSpace) {
  const Grammar g = of(text_not_starting_with("{ \"n\""));
  // Reference: strip leading white space, then '{', white space, '"n"'.
  const auto opens = [](const std::string& s) {
    size_t i = s.find_first_not_of(" \n");
    if (i == std::string::npos || s[i] != '{') return false;
    i = s.find_first_not_of(" \n", i + 1);
    return i != std::string::npos && s.compare(i, 3, "\"n\"") == 0;
  };
  every_string("{ \"n\nx", 6, [&](const std::string& s) { EXPECT_EQ(grammar_accepts(g, s), !opens(s)) << s; });
}

TEST(ComposedGrammarBuilder, EmbeddedGrammarsReadAsTheyDoAlone) {
  // Two grammars with rules of their own, embedded after free text and one after the other.
  GrammarBuilder inner;
  const int digits = inner.declare("digits");
  const int number = inner.declare("number");
  inner.define(digits, plus(byte_range('0', '9')));
  inner.define(number, seq({literal("("), rule_ref(digits), literal(")")}));
  const Grammar numbers = inner.build(number);
  const Grammar word = testing::regex_grammar("[a-z]+");
  ComposedGrammarBuilder b;
  const int root = b.declare("root");
  const int n = b.embed(numbers);
  const int w = b.embed(word);
  b.define(root, seq({marker_free_text("("), rule_ref(n), star(seq({literal(","), rule_ref(w)}))}));
  const Grammar g = b.build(root);
  EXPECT_TRUE(grammar_accepts(g, "say (42)"));
  EXPECT_TRUE(grammar_accepts(g, "(7),ab,c"));
  EXPECT_FALSE(grammar_accepts(g, "say (4a)"));
  EXPECT_FALSE(grammar_accepts(g, "say (42),"));
  EXPECT_FALSE(grammar_accepts(g, "say 42"));
  EXPECT_FALSE(grammar_accepts(g, "(1),A"));
}

}  // namespace
}  // namespace lemma::grammar
