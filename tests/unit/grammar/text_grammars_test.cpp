#include "lemma/grammar/text_grammars.h"

#include <gtest/gtest.h>

#include "grammar_test_util.h"
#include "lemma/base/error.h"

namespace lemma::grammar {
namespace {

using testing::grammar_accepts;

TEST(TextGrammars, ChoiceAcceptsExactlyTheChoices) {
  const Grammar g = choice_grammar({"yes", "no", "not sure"});
  for (const char* ok : {"yes", "no", "not sure"}) EXPECT_TRUE(grammar_accepts(g, ok)) << ok;
  for (const char* bad : {"", "y", "yes ", "nope", "not"}) EXPECT_FALSE(grammar_accepts(g, bad)) << bad;
  EXPECT_THROW(choice_grammar({}), InvalidArgument);
}

TEST(TextGrammars, RegexMustMatchTheWholeText) {
  const Grammar g = regex_grammar("[A-Z][a-z]+ \\d{2}");
  EXPECT_TRUE(grammar_accepts(g, "Paris 42"));
  EXPECT_FALSE(grammar_accepts(g, "paris 42"));
  EXPECT_FALSE(grammar_accepts(g, "Paris 42!"));
  EXPECT_THROW(regex_grammar("(?=x)x"), Unsupported);
}

}  // namespace
}  // namespace lemma::grammar
