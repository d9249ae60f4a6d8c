// PropertyOrder::kAny: defined properties in any order, each at most once, required ones all
// present, extra keys (where allowed) anywhere; nested objects keep their own marks; and the
// slots it is built on (rule_ref_once / require_slots) in a grammar of their own.
#include <gtest/gtest.h>

#include <algorithm>

#include "grammar_test_util.h"

namespace lemma::grammar::testing {
namespace {

bool any_order_accepts(const std::string& schema, const std::string& text) {
  JsonSchemaOptions o;
  o.property_order = PropertyOrder::kAny;
  return grammar_accepts(json_schema_grammar(nlohmann::ordered_json::parse(schema), o), text);
}

const char* kClosed = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"null"}},
                          "required":["a","b"],"additionalProperties":false})";

TEST(PropertyOrder, EveryPermutationOfValidMembersIsAccepted) {
  std::vector<std::string> members = {R"("a": 1)", R"("b": "x")", R"("c": null)"};
  std::sort(members.begin(), members.end());
  int permutations = 0;
  do {
    const std::string all = "{" + members[0] + ", " + members[1] + ", " + members[2] + "}";
    EXPECT_TRUE(any_order_accepts(kClosed, all)) << all;
    EXPECT_EQ(schema_accepts(kClosed, all), all == R"({"a": 1, "b": "x", "c": null})") << "the default: definition order";
    ++permutations;
  } while (std::next_permutation(members.begin(), members.end()));
  EXPECT_EQ(permutations, 6);
  EXPECT_TRUE(any_order_accepts(kClosed, R"({"b": "x", "a": 1})"));
  EXPECT_FALSE(schema_accepts(kClosed, R"({"b": "x", "a": 1})"));
}

TEST(PropertyOrder, DuplicatesMissingRequiredAndUnknownKeysAreRefused) {
  EXPECT_FALSE(any_order_accepts(kClosed, R"({"b": "x", "a": 1, "a": 2})"));
  EXPECT_FALSE(any_order_accepts(kClosed, R"({"c": null, "c": null, "a": 1, "b": "x"})"));
  EXPECT_FALSE(any_order_accepts(kClosed, R"({"c": null, "b": "x"})"));
  EXPECT_FALSE(any_order_accepts(kClosed, R"({})"));
  EXPECT_FALSE(any_order_accepts(kClosed, R"({"b": "x", "a": 1, "d": 2})"));
  EXPECT_FALSE(any_order_accepts(kClosed, R"({"b": 1, "a": 1})"));
  EXPECT_FALSE(any_order_accepts(kClosed, R"({"b": "x", , "a": 1})"));
  EXPECT_FALSE(any_order_accepts(kClosed, R"({"b": "x", "a": 1,})"));
  EXPECT_TRUE(any_order_accepts(kClosed, "{\n \"b\" : \"x\" ,\"a\":1 }"));
}

TEST(PropertyOrder, ExtraKeysGoAnywhereButNeverRepeatADefinedName) {
  const char* open = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],
                         "additionalProperties":{"type":"boolean"}})";
  EXPECT_TRUE(any_order_accepts(open, R"({"x": true, "a": 1, "y": false, "b": "s"})"));
  EXPECT_TRUE(any_order_accepts(open, R"({"a": 1})"));
  EXPECT_FALSE(any_order_accepts(open, R"({"x": true})"));
  EXPECT_FALSE(any_order_accepts(open, R"({"x": 1, "a": 1})"));
  EXPECT_FALSE(any_order_accepts(open, R"({"a": 1, "a": true})"));
  EXPECT_TRUE(any_order_accepts(R"({"type":"object"})", R"({"q": 1, "p": [2]})"));
  EXPECT_TRUE(any_order_accepts(R"({"type":"object"})", R"({})"));
}

TEST(PropertyOrder, NestedObjectsKeepTheirOwnMarks) {
  const char* nested = R"({"type":"object","properties":{
      "a":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false},
      "b":{"type":"array","items":{"$ref":"#"}}},"required":["a"],"additionalProperties":false})";
  EXPECT_TRUE(any_order_accepts(nested, R"({"b": [], "a": {"b": 1, "a": 2}})"));
  EXPECT_TRUE(any_order_accepts(nested, R"({"b": [{"a": {"a": 1, "b": 2}}, {"b": [], "a": {"b": 1, "a": 2}}], "a": {"b": 1, "a": 2}})"));
  EXPECT_FALSE(any_order_accepts(nested, R"({"b": [{"b": []}], "a": {"b": 1, "a": 2}})"));
  EXPECT_FALSE(any_order_accepts(nested, R"({"a": {"b": 1}, "b": []})"));
  EXPECT_FALSE(any_order_accepts(nested, R"({"a": {"a": 1, "b": 2, "a": 3}})"));
}

TEST(PropertyOrder, ManyPropertiesKeepTheSchemaOrderBeyondTheSlots) {
  nlohmann::ordered_json s = {{"type", "object"}, {"additionalProperties", false}};
  for (int i = 0; i < kMaxSlots + 1; ++i) s["properties"]["p" + std::to_string(i)] = {{"type", "integer"}};
  JsonSchemaOptions o;
  o.property_order = PropertyOrder::kAny;
  const Grammar g = json_schema_grammar(s, o);
  EXPECT_TRUE(grammar_accepts(g, R"({"p0": 1, "p1": 2})"));
  EXPECT_FALSE(grammar_accepts(g, R"({"p1": 2, "p0": 1})"));
}

TEST(Slots, OnceCallsAndRequiredSlots) {
  // root ::= (a | b | c)* with a, b at most once each, and a required.
  GrammarBuilder b;
  const int root = b.declare("root");
  const int ra = b.declare("a"), rb = b.declare("b"), rc = b.declare("c");
  b.define(ra, literal("a"));
  b.define(rb, literal("b"));
  b.define(rc, literal("c"));
  b.define(root, seq({star(alt({rule_ref_once(ra, 0), rule_ref_once(rb, 1), rule_ref(rc)})), require_slots(1)}));
  const Grammar g = b.build(root);
  for (const char* ok : {"a", "ba", "cacbc", "ab"}) EXPECT_TRUE(grammar_accepts(g, ok)) << ok;
  for (const char* bad : {"", "b", "aa", "abb", "cc", "bab"}) EXPECT_FALSE(grammar_accepts(g, bad)) << bad;
}

}  // namespace
}  // namespace lemma::grammar::testing
