// Jump-forward: the bytes a grammar forces from a state (Recognizer::forced_bytes and
// ConstraintState::forced_bytes): keys and separators of a fixed-order object, the tail of an enum
// once its prefix is unique, nothing inside a free string or where the text may end.
#include <gtest/gtest.h>

#include "grammar_test_util.h"
#include "lemma/grammar/text_grammars.h"
#include "lemma/grammar/token_constraint.h"

namespace lemma::grammar::testing {
namespace {

struct Forced {
  explicit Forced(Grammar g) : states(std::make_shared<const Grammar>(std::move(g))), r(states) {}
  std::string after(const std::string& text, size_t max = 256) {
    r.rollback_to(0);
    EXPECT_TRUE(r.feed(text)) << text;
    return r.forced_bytes(max);
  }
  ParserStates states;
  Recognizer r;
};

JsonSchemaOptions python_separators() {
  JsonSchemaOptions o;
  o.compact = true;
  o.item_separator = ", ";
  o.key_separator = ": ";
  return o;
}

const char* kPerson = R"({"type":"object","properties":{"name":{"type":"string"},"kind":{"enum":["apple","apricot","banana"]},
                         "age":{"type":"integer"}},"required":["name","kind","age"],"additionalProperties":false})";

TEST(ForcedBytes, KeysSeparatorsAndUniqueEnumTails) {
  Forced f(json_schema_grammar(nlohmann::ordered_json::parse(kPerson), python_separators()));
  EXPECT_EQ(f.after(""), R"({"name": ")");
  EXPECT_EQ(f.after(R"({"name")"), R"(: ")");
  EXPECT_EQ(f.after(R"({"name": "Bo)"), "");  // a free string: any character or the quote
  EXPECT_EQ(f.after(R"({"name": "Bo")"), R"(, "kind": ")");
  EXPECT_EQ(f.after(R"({"name": "Bo", "kind": "a)"), "p");  // apple | apricot
  EXPECT_EQ(f.after(R"({"name": "Bo", "kind": "b)"), R"(anana", "age": )");
  EXPECT_EQ(f.after(R"({"name": "Bo", "kind": "banana", "age": 1)"), "");  // more digits or '}'
  EXPECT_EQ(f.after(R"({"name": "Bo", "kind": "banana", "age": 1})"), "");  // complete
  EXPECT_EQ(f.after(R"({"name": "Bo", "kind": "b)", 3), "ana");            // bounded
}

TEST(ForcedBytes, FreeWhitespaceAndAnyOrderLeaveChoices) {
  Forced free(json_schema_grammar(nlohmann::ordered_json::parse(kPerson)));
  EXPECT_EQ(free.after(R"({"name")"), "");  // whitespace or ':'
  JsonSchemaOptions any = python_separators();
  any.property_order = PropertyOrder::kAny;
  Forced any_order(json_schema_grammar(nlohmann::ordered_json::parse(kPerson), any));
  EXPECT_EQ(any_order.after(""), R"({")");  // any of three keys
  EXPECT_EQ(any_order.after(R"({"n)"), R"(ame": ")");
}

TEST(ForcedBytes, WholeUtf8CharactersOnly) {
  // "é" is C3 A9 and "è" is C3 A8: the shared lead byte is forced, the character is not.
  Forced f(choice_grammar({"x\xC3\xA9", "x\xC3\xA8"}));
  EXPECT_EQ(f.after(""), "x");
  Forced g(choice_grammar({"\xC3\xA9t\xC3\xA9"}));
  EXPECT_EQ(g.after(""), "\xC3\xA9t\xC3\xA9");
}

TEST(ForcedBytes, ThroughTheConstraintState) {
  TokenVocabulary v;
  v.bytes = {"{", "\"", "name", "\": \"", "x", "\"}", ""};
  v.special = {false, false, false, false, false, false, true};
  v.end_ids = {6};
  const char* schema = R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false})";
  TokenConstraint c{std::make_shared<const Grammar>(json_schema_grammar(nlohmann::ordered_json::parse(schema), python_separators())),
                    std::make_shared<const VocabularyIndex>(v), "test"};
  ConstraintState s(c);
  EXPECT_EQ(s.forced_bytes(), R"({"name": ")");
  ASSERT_TRUE(s.accept(0));
  ASSERT_TRUE(s.accept(1));
  ASSERT_TRUE(s.accept(2));
  EXPECT_EQ(s.forced_bytes(), R"(": ")");
  ASSERT_TRUE(s.accept(3));
  EXPECT_EQ(s.forced_bytes(), "");
  ASSERT_TRUE(s.accept(4));
  ASSERT_TRUE(s.accept(5));
  EXPECT_TRUE(s.is_complete());
  EXPECT_EQ(s.forced_bytes(), "");
  s.rollback(2);
  EXPECT_EQ(s.forced_bytes(), "");
  ASSERT_TRUE(s.accept(6) == false);
}

}  // namespace
}  // namespace lemma::grammar::testing
