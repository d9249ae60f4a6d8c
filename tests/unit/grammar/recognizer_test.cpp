// The byte-level recognizer: all-or-nothing feeds, rollback to any earlier byte, acceptance,
// and recursion through rules (balanced brackets).
#include <gtest/gtest.h>

#include "grammar_test_util.h"
#include "lemma/base/error.h"

namespace lemma::grammar::testing {
namespace {

// S -> "(" S ")" S | ""
Grammar balanced() {
  GrammarBuilder b;
  const int s = b.declare("S");
  b.define(s, optional(seq({literal("("), rule_ref(s), literal(")"), rule_ref(s)})));
  return b.build(s);
}

TEST(Recognizer, RecursionThroughRules) {
  EXPECT_TRUE(grammar_accepts(balanced(), ""));
  EXPECT_TRUE(grammar_accepts(balanced(), "(()())()"));
  EXPECT_FALSE(grammar_accepts(balanced(), "(()"));
  EXPECT_FALSE(grammar_accepts(balanced(), "())"));
}

TEST(Recognizer, FeedIsAllOrNothingAndRollbackRestores) {
  ParserStates states(std::make_shared<const Grammar>(balanced()));
  Recognizer r(states);
  EXPECT_TRUE(r.accepting());
  EXPECT_TRUE(r.feed("(("));
  EXPECT_FALSE(r.feed(")))"));
  EXPECT_EQ(r.position(), 2u);
  EXPECT_TRUE(r.can_feed("))"));
  EXPECT_FALSE(r.can_feed(")))"));
  EXPECT_FALSE(r.accepting());
  EXPECT_TRUE(r.feed("))"));
  EXPECT_TRUE(r.accepting());
  r.rollback_to(1);
  EXPECT_FALSE(r.accepting());
  EXPECT_TRUE(r.feed(")"));
  EXPECT_TRUE(r.accepting());
  EXPECT_THROW(r.rollback_to(5), InvalidArgument);
}

TEST(Recognizer, LeftRecursionIsAnErrorNotAHang) {
  GrammarBuilder b;
  const int s = b.declare("S");
  b.define(s, alt({seq({rule_ref(s), literal("a")}), literal("a")}));
  EXPECT_THROW(ParserStates(std::make_shared<const Grammar>(b.build(s))), InvalidArgument);
}

}  // namespace
}  // namespace lemma::grammar::testing
