// JSON Schema -> grammar, keyword by keyword: valid texts accepted, invalid ones refused, and
// keywords that cannot be honoured refused at compile time with their name.
#include <gtest/gtest.h>

#include "grammar_test_util.h"
#include "lemma/base/error.h"

namespace lemma::grammar::testing {
namespace {

TEST(JsonSchemaGrammar, Types) {
  EXPECT_TRUE(schema_accepts(R"({"type":"null"})", "null"));
  EXPECT_FALSE(schema_accepts(R"({"type":"null"})", "nul"));
  EXPECT_TRUE(schema_accepts(R"({"type":"boolean"})", "false"));
  EXPECT_TRUE(schema_accepts(R"({"type":"integer"})", "-120"));
  EXPECT_FALSE(schema_accepts(R"({"type":"integer"})", "012"));
  EXPECT_FALSE(schema_accepts(R"({"type":"integer"})", "1.5"));
  EXPECT_TRUE(schema_accepts(R"({"type":"number"})", "-1.5e+10"));
  EXPECT_FALSE(schema_accepts(R"({"type":"number"})", "1."));
  EXPECT_TRUE(schema_accepts(R"({"type":["string","null"]})", "null"));
  EXPECT_TRUE(schema_accepts(R"({"type":["string","null"]})", R"("a\"b\u00e9")"));
  EXPECT_FALSE(schema_accepts(R"({"type":["string","null"]})", "1"));
  EXPECT_TRUE(schema_accepts(R"({})", R"({"a": [1, {"b": null}], "c": "é"})"));
  EXPECT_TRUE(schema_accepts(R"(true)", "[]"));
}

TEST(JsonSchemaGrammar, StringsCarryUtf8AndEscapes) {
  EXPECT_TRUE(schema_accepts(R"({"type":"string"})", "\"h\xC3\xA9llo \xF0\x9F\x98\x80\""));
  EXPECT_FALSE(schema_accepts(R"({"type":"string"})", "\"\xC3\""));  // truncated code point
  EXPECT_FALSE(schema_accepts(R"({"type":"string"})", "\"a\nb\""));   // raw control character
  EXPECT_TRUE(schema_accepts(R"({"type":"string"})", R"("a\nb")"));
}

TEST(JsonSchemaGrammar, StringLengthsCountCharacters) {
  const char* s = R"({"type":"string","minLength":2,"maxLength":3})";
  EXPECT_FALSE(schema_accepts(s, R"("a")"));
  EXPECT_TRUE(schema_accepts(s, R"("ab")"));
  EXPECT_TRUE(schema_accepts(s, "\"\xC3\xA9\xC3\xA9\xC3\xA9\""));
  EXPECT_FALSE(schema_accepts(s, R"("abcd")"));
}

TEST(JsonSchemaGrammar, IntegerBounds) {
  const char* s = R"({"type":"integer","minimum":-15,"maximum":123})";
  for (int x = -40; x <= 300; ++x) {
    EXPECT_EQ(schema_accepts(s, std::to_string(x)), x >= -15 && x <= 123) << x;
  }
  const char* open = R"({"type":"integer","exclusiveMinimum":9})";
  EXPECT_FALSE(schema_accepts(open, "9"));
  EXPECT_TRUE(schema_accepts(open, "10"));
  EXPECT_TRUE(schema_accepts(open, "1000000"));
  EXPECT_FALSE(schema_accepts(open, "-10"));
  const char* neg = R"({"type":"integer","maximum":-3})";
  EXPECT_TRUE(schema_accepts(neg, "-3"));
  EXPECT_TRUE(schema_accepts(neg, "-3000"));
  EXPECT_FALSE(schema_accepts(neg, "-2"));
  EXPECT_FALSE(schema_accepts(neg, "0"));
  // Bounds past int64 (as written by 64-bit schema generators) are pulled in on the strict side.
  const char* huge = R"({"type":"integer","minimum":0,"maximum":9223372036854776000})";
  EXPECT_TRUE(schema_accepts(huge, "1643723400"));
  EXPECT_TRUE(schema_accepts(huge, "9000000000000000000"));
  EXPECT_FALSE(schema_accepts(huge, "9000000000000000001"));
  EXPECT_FALSE(schema_accepts(huge, "-1"));
  EXPECT_TRUE(schema_accepts(R"({"type":"integer","maximum":1e300})", "-5"));
  EXPECT_THROW(json_schema_grammar(nlohmann::ordered_json::parse(R"({"type":"integer","minimum":1e300})")), Unsupported);
}

TEST(JsonSchemaGrammar, NumberBoundsAgreeWithArithmetic) {
  const char* texts[] = {"-3", "-2.5", "-2", "-2.0", "-1.75", "-0", "-0.0", "-0.5", "0", "0.0", "0.001", "0.5", "1",
                         "1.5", "2", "2.00", "2.01", "3", "10", "12.5"};
  struct Case {
    const char* keywords;
    bool (*ok)(double);
  };
  const Case cases[] = {
      {R"("minimum":0)", [](double x) { return x >= 0; }},
      {R"("exclusiveMinimum":0)", [](double x) { return x > 0; }},
      {R"("minimum":-2,"maximum":2)", [](double x) { return x >= -2 && x <= 2; }},
      {R"("exclusiveMinimum":-2,"exclusiveMaximum":2)", [](double x) { return x > -2 && x < 2; }},
      {R"("maximum":-1)", [](double x) { return x <= -1; }},
      {R"("minimum":1,"exclusiveMaximum":3)", [](double x) { return x >= 1 && x < 3; }},
  };
  for (const auto& c : cases) {
    const std::string schema = std::string(R"({"type":"number",)") + c.keywords + "}";
    for (const char* t : texts) EXPECT_EQ(schema_accepts(schema, t), c.ok(std::stod(t))) << schema << " " << t;
  }
  EXPECT_THROW(json_schema_grammar(nlohmann::ordered_json::parse(R"({"type":"number","minimum":0.5})")), Unsupported);
}

TEST(JsonSchemaGrammar, EnumAndConst) {
  const char* s = R"({"enum":["a", 1, null, {"k": [true]}]})";
  EXPECT_TRUE(schema_accepts(s, R"("a")"));
  EXPECT_TRUE(schema_accepts(s, "1"));
  EXPECT_TRUE(schema_accepts(s, "null"));
  EXPECT_TRUE(schema_accepts(s, R"({"k": [true]})"));
  EXPECT_FALSE(schema_accepts(s, R"("b")"));
  EXPECT_FALSE(schema_accepts(s, "2"));
  EXPECT_TRUE(schema_accepts(R"({"const":"x"})", R"("x")"));
  EXPECT_FALSE(schema_accepts(R"({"const":"x"})", R"("y")"));
  EXPECT_FALSE(schema_accepts(R"({"type":"string","enum":["a", 1]})", "1"));
  // Numbers compare by value: 2 and 2.0 are the same member.
  for (const char* e : {R"({"enum":[2.0]})", R"({"const":2.0})", R"({"type":"number","enum":[2.0]})"}) {
    EXPECT_TRUE(schema_accepts(e, "2")) << e;
    EXPECT_TRUE(schema_accepts(e, "2.0")) << e;
    EXPECT_FALSE(schema_accepts(e, "2.5")) << e;
    EXPECT_FALSE(schema_accepts(e, "20")) << e;
  }
  // Whether 2.0 is an integer depends on the draft: the integer spelling only.
  EXPECT_TRUE(schema_accepts(R"({"type":"integer","enum":[2.0]})", "2"));
  EXPECT_FALSE(schema_accepts(R"({"type":"integer","enum":[2.0]})", "2.0"));
  EXPECT_FALSE(schema_accepts(R"({"enum":[2]})", "2.0"));
  EXPECT_TRUE(schema_accepts(R"({"enum":[1.5]})", "1.5"));
}

TEST(JsonSchemaGrammar, PropertiesInOrderWithRequired) {
  const char* s = R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},
                      "required":["b"],"additionalProperties":false})";
  EXPECT_TRUE(schema_accepts(s, R"({"a": 1, "b": "x"})"));
  EXPECT_TRUE(schema_accepts(s, R"({"b": "x"})"));
  EXPECT_TRUE(schema_accepts(s, "{\n  \"b\" :\"x\"\n}"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1})"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": "1", "b": "x"})"));
  EXPECT_FALSE(schema_accepts(s, R"({"b": "x", "c": 1})"));
  EXPECT_FALSE(schema_accepts(s, R"({, "b": "x"})"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1, "b": "x",})"));
  EXPECT_TRUE(schema_accepts(s, R"({"a":1,"b":"x"})", /*compact=*/true));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1, "b": "x"})", /*compact=*/true));
}

TEST(JsonSchemaGrammar, AdditionalPropertiesNeverRedefineKnownOnes) {
  const char* s = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
  EXPECT_TRUE(schema_accepts(s, R"({"a": 1, "ab": "x", "": 2, "b": []})"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1, "a": "x"})"));
  const char* typed = R"({"type":"object","additionalProperties":{"type":"integer"}})";
  EXPECT_TRUE(schema_accepts(typed, R"({"x": 1, "y": 2})"));
  EXPECT_FALSE(schema_accepts(typed, R"({"x": "1"})"));
}

TEST(JsonSchemaGrammar, Arrays) {
  const char* s = R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})";
  EXPECT_FALSE(schema_accepts(s, "[]"));
  EXPECT_TRUE(schema_accepts(s, "[1]"));
  EXPECT_TRUE(schema_accepts(s, "[1, 2, 3]"));
  EXPECT_FALSE(schema_accepts(s, "[1, 2, 3, 4]"));
  EXPECT_FALSE(schema_accepts(s, "[1, \"2\"]"));
  const char* tuple = R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})";
  EXPECT_TRUE(schema_accepts(tuple, "[]"));
  EXPECT_TRUE(schema_accepts(tuple, R"(["a"])"));
  EXPECT_TRUE(schema_accepts(tuple, R"(["a", 1])"));
  EXPECT_FALSE(schema_accepts(tuple, R"(["a", 1, 2])"));
  EXPECT_FALSE(schema_accepts(tuple, R"([1])"));
  const char* old_tuple = R"({"items":[{"type":"string"}],"additionalItems":{"type":"null"},"minItems":2,"type":"array"})";
  EXPECT_TRUE(schema_accepts(old_tuple, R"(["a", null, null])"));
  EXPECT_FALSE(schema_accepts(old_tuple, R"(["a"])"));
}

TEST(JsonSchemaGrammar, CombinatorsAndRecursiveRefs) {
  const char* any_of = R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]})";
  EXPECT_TRUE(schema_accepts(any_of, "5"));
  EXPECT_TRUE(schema_accepts(any_of, R"("a")"));
  EXPECT_FALSE(schema_accepts(any_of, R"("ab")"));
  const char* all_of = R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                     {"properties":{"b":{"type":"string"}},"required":["b"]}]})";
  EXPECT_TRUE(schema_accepts(all_of, R"({"a": 1, "b": "x"})"));
  EXPECT_FALSE(schema_accepts(all_of, R"({"a": 1})"));
  const char* tree = R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{
      "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["v"],"additionalProperties":false}}})";
  EXPECT_TRUE(schema_accepts(tree, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4}]}]})"));
  EXPECT_FALSE(schema_accepts(tree, R"({"v": 1, "kids": [{"kids": []}]})"));
}

TEST(JsonSchemaGrammar, OneOfOnlyWhenBranchesCannotOverlap) {
  const char* by_type = R"({"oneOf":[{"type":"integer"},{"type":"string"}]})";
  EXPECT_TRUE(schema_accepts(by_type, "1"));
  EXPECT_TRUE(schema_accepts(by_type, R"("1")"));
  const char* by_tag = R"({"type":"object","oneOf":[
      {"properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind"]},
      {"properties":{"kind":{"enum":["b","c"]}},"required":["kind"]}]})";
  EXPECT_TRUE(schema_accepts(by_tag, R"({"kind": "a", "x": 1})"));
  EXPECT_TRUE(schema_accepts(by_tag, R"({"kind": "c"})"));
  EXPECT_FALSE(schema_accepts(by_tag, R"({"kind": "d"})"));
  // {"a": 1} matches both branches, which oneOf forbids: not compilable as anyOf.
  EXPECT_THROW(json_schema_grammar(nlohmann::ordered_json::parse(
                   R"({"type":"object","oneOf":[{"required":["a"]},{"properties":{"a":{"type":"integer"}}}]})")),
               Unsupported);
}

TEST(JsonSchemaGrammar, PatternsAndFormats) {
  const char* anchored = R"({"type":"string","pattern":"^[a-z]+-\\d{2}$"})";
  EXPECT_TRUE(schema_accepts(anchored, R"("ab-12")"));
  EXPECT_FALSE(schema_accepts(anchored, R"("ab-123")"));
  const char* search = R"({"type":"string","pattern":"x\\d"})";
  EXPECT_TRUE(schema_accepts(search, R"("aax1bb")"));
  EXPECT_FALSE(schema_accepts(search, R"("aaxbb")"));
  const char* date = R"({"type":"string","format":"date"})";
  EXPECT_TRUE(schema_accepts(date, R"("2024-02-29")"));
  EXPECT_FALSE(schema_accepts(date, R"("2023-02-29")"));
  EXPECT_FALSE(schema_accepts(date, R"("1900-02-29")"));
  EXPECT_TRUE(schema_accepts(date, R"("2000-02-29")"));
  EXPECT_FALSE(schema_accepts(date, R"("2023-04-31")"));
  EXPECT_FALSE(schema_accepts(date, R"("2023-13-01")"));
  EXPECT_TRUE(schema_accepts(R"({"type":"string","format":"date-time"})", R"("2023-01-02T03:04:05.123Z")"));
  EXPECT_TRUE(schema_accepts(R"({"type":"string","format":"uuid"})", R"("123e4567-e89b-12d3-a456-426614174000")"));
  const char* uri = R"({"type":"string","format":"uri"})";
  EXPECT_TRUE(schema_accepts(uri, R"("https://user@example.com:8080/a/b%20c?q=1#frag")"));
  EXPECT_TRUE(schema_accepts(uri, R"("urn:isbn:0451450523")"));
  EXPECT_FALSE(schema_accepts(uri, R"("/relative/path")"));
  EXPECT_FALSE(schema_accepts(uri, R"("http://a b")"));
  EXPECT_FALSE(schema_accepts(uri, R"("http://host:port")"));
  EXPECT_TRUE(schema_accepts(R"({"type":"string","format":"uri-reference"})", R"("../a/b?x")"));
  // Names the specifications do not define are annotations: validators ignore them.
  EXPECT_TRUE(schema_accepts(R"({"type":"string","format":"int32"})", R"("anything")"));
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreNamed) {
  for (const char* kw : {"not", "multipleOf", "if", "propertyNames"}) {
    const std::string schema = std::string(R"({"type":"object",")") + kw + R"(":{}})";
    try {
      json_schema_grammar(nlohmann::ordered_json::parse(schema));
      ADD_FAILURE() << kw << " compiled";
    } catch (const Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find(kw), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(json_schema_grammar(nlohmann::ordered_json::parse(R"({"type":"array","uniqueItems":true})")), Unsupported);
  EXPECT_THROW(json_schema_grammar(nlohmann::ordered_json::parse(R"({"type":"string","format":"hostname"})")), Unsupported);
  EXPECT_THROW(json_schema_grammar(nlohmann::ordered_json::parse(R"({"$ref":"http://x/y.json"})")), Unsupported);
}

// patternProperties: a key matching patterns takes all their schemas (and a named property's own
// schema too), a key matching none takes additionalProperties.
TEST(JsonSchemaGrammar, PatternPropertiesSplitKeysByPattern) {
  const char* s = R"({"type":"object","properties":{"id":{"type":"integer"},"x-id":{"type":"integer"}},
    "patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false})";
  EXPECT_TRUE(schema_accepts(s, R"({"id": 1, "x-a": "s", "x-b": "t"})"));
  EXPECT_FALSE(schema_accepts(s, R"({"x-a": 1})"));      // the pattern's schema
  EXPECT_FALSE(schema_accepts(s, R"({"y": "s"})"));      // matches no pattern, additionalProperties false
  EXPECT_FALSE(schema_accepts(s, R"({"x-id": 1})"));     // named and matching: integer and string
  EXPECT_FALSE(schema_accepts(s, R"({"x-id": "s"})"));
  EXPECT_TRUE(schema_accepts(s, R"({"id": 1})"));
  // Overlapping patterns: both schemas; keys matching none take additionalProperties' schema.
  const char* two = R"({"patternProperties":{"a":{"type":"integer"},"b":{"minimum":3}},"additionalProperties":{"type":"null"}})";
  EXPECT_TRUE(schema_accepts(two, R"({"a": 1, "b": 7, "ab": 4, "c": null})"));
  EXPECT_FALSE(schema_accepts(two, R"({"ab": 2})"));
  EXPECT_FALSE(schema_accepts(two, R"({"ab": 3.5})"));
  EXPECT_FALSE(schema_accepts(two, R"({"c": 1})"));
  EXPECT_TRUE(schema_accepts(two, R"({"": null})"));
  // Unanchored patterns match anywhere (JSON Schema's search semantics); UTF-8 keys work.
  const char* utf8 = R"({"patternProperties":{"é+$":{"type":"boolean"}},"additionalProperties":false})";
  EXPECT_TRUE(schema_accepts(utf8, "{\"caf\xC3\xA9\": true}"));
  EXPECT_FALSE(schema_accepts(utf8, "{\"caf\xC3\xA9s\": true}"));
  EXPECT_FALSE(schema_accepts(utf8, "{\"caf\xC3\xA9\": 1}"));
  // A required key no property names takes the matching patterns' schema.
  const char* req = R"({"required":["n1"],"patternProperties":{"^n[0-9]$":{"type":"integer"}},"additionalProperties":false})";
  EXPECT_TRUE(schema_accepts(req, R"({"n1": 5})"));
  EXPECT_FALSE(schema_accepts(req, R"({"n2": 5})"));
  EXPECT_FALSE(schema_accepts(req, R"({"n1": "5"})"));
}

// A pattern cut to a length: characters counted as decoded (an escape is one, a UTF-8 sequence one).
TEST(JsonSchemaGrammar, PatternWithLengthBounds) {
  const char* s = R"({"type":"string","pattern":"^[a-z\\\"]+$","minLength":2,"maxLength":3})";
  EXPECT_FALSE(schema_accepts(s, R"("a")"));
  EXPECT_TRUE(schema_accepts(s, R"("ab")"));
  EXPECT_TRUE(schema_accepts(s, R"("a\"b")"));  // three characters, one of them escaped
  EXPECT_FALSE(schema_accepts(s, R"("abcd")"));
  EXPECT_FALSE(schema_accepts(s, R"("aB")"));
  const char* open = R"({"type":"string","pattern":"x","minLength":3})";  // search semantics, no upper bound
  EXPECT_TRUE(schema_accepts(open, "\"\xC3\xA9x\xC3\xA9\""));
  EXPECT_FALSE(schema_accepts(open, "\"\xC3\xA9x\""));
  EXPECT_TRUE(schema_accepts(open, R"("yyyyyyyyyyxyyyy")"));
  EXPECT_FALSE(schema_accepts(open, R"("yyyyyyyyyy")"));
}

// dependencies (array form): "a needs b and c", checked on the members present when the object ends.
TEST(JsonSchemaGrammar, DependenciesRequireTheirProperties) {
  const char* s = R"({"type":"object","properties":{"a":{},"b":{},"c":{}},"dependencies":{"a":["b","c"]}})";
  EXPECT_TRUE(schema_accepts(s, R"({"c": 3, "a": 1, "b": 2})"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1, "b": 2})"));
  EXPECT_TRUE(schema_accepts(s, R"({"b": 2})"));
  EXPECT_TRUE(schema_accepts(s, R"({"z": 2})"));
  // A needed name no key can take (additionalProperties false): the dependent key is forbidden.
  const char* closed = R"({"properties":{"a":{}},"additionalProperties":false,"dependentRequired":{"a":["x"]}})";
  EXPECT_FALSE(schema_accepts(closed, R"({"a": 1})"));
  EXPECT_TRUE(schema_accepts(closed, "{}"));
  EXPECT_THROW(json_schema_grammar(nlohmann::ordered_json::parse(R"({"dependencies":{"a":{"required":["b"]}}})")), Unsupported);
}

// oneOf whose branches only require properties: exactly one set complete.
TEST(JsonSchemaGrammar, OneOfRequiredSetsIsExactlyOne) {
  const char* s = R"({"properties":{"a":{},"b":{},"c":{}},"oneOf":[{"required":["a"]},{"required":["b","c"]}]})";
  EXPECT_TRUE(schema_accepts(s, R"({"a": 1})"));
  EXPECT_TRUE(schema_accepts(s, R"({"c": 1, "b": 2})"));
  EXPECT_TRUE(schema_accepts(s, R"({"a": 1, "b": 2})"));  // the second set is incomplete
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1, "b": 2, "c": 3})"));
  EXPECT_FALSE(schema_accepts(s, R"({"b": 2})"));
  EXPECT_FALSE(schema_accepts(s, "[]"));  // a non-object matches every branch
  // Names only the branches mention are still extra keys with the additionalProperties schema.
  const char* extra = R"({"additionalProperties":{"type":"integer"},"oneOf":[{"required":["x"]},{"required":["y"]}]})";
  EXPECT_TRUE(schema_accepts(extra, R"({"y": 1})"));
  EXPECT_FALSE(schema_accepts(extra, R"({"y": "s"})"));
  EXPECT_FALSE(schema_accepts(extra, R"({"x": 1, "y": 2})"));
}

TEST(JsonSchemaGrammar, MinAndMaxPropertiesCountMembers) {
  const char* s = R"({"type":"object","properties":{"a":{},"b":{}},"minProperties":1,"maxProperties":2})";
  EXPECT_FALSE(schema_accepts(s, "{}"));
  EXPECT_TRUE(schema_accepts(s, R"({"b": 1})"));
  EXPECT_TRUE(schema_accepts(s, R"({"z": 1, "a": 2})"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1, "b": 2, "c": 3})"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1, "a": 2})"));  // still each named property once
  const char* one = R"({"patternProperties":{"^.*$":{"type":"integer"}},"additionalProperties":false,"maxProperties":1})";
  EXPECT_TRUE(schema_accepts(one, R"({"k": 1})"));
  EXPECT_FALSE(schema_accepts(one, R"({"k": 1, "l": 2})"));
}

// allOf with additionalProperties: each part judges every key by its own properties, so a part
// that forbids extra keys forbids what only another part names.
TEST(JsonSchemaGrammar, AllOfKeepsEachPartsAdditionalProperties) {
  const char* s = R"({"allOf":[{"properties":{"a":{"type":"integer"}},"additionalProperties":false},
                               {"properties":{"a":{"minimum":2},"b":{}}}]})";
  EXPECT_TRUE(schema_accepts(s, R"({"a": 3})"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 1})"));
  EXPECT_FALSE(schema_accepts(s, R"({"a": 3, "b": 1})"));
  const char* open = R"({"allOf":[{"properties":{"a":{}},"additionalProperties":{"type":"string"}},
                                  {"properties":{"b":{"type":["string","integer"]}}}]})";
  EXPECT_TRUE(schema_accepts(open, R"({"a": 1, "b": "x", "c": "y"})"));
  EXPECT_FALSE(schema_accepts(open, R"({"b": 1})"));  // "b" is extra to the first part: a string
  EXPECT_FALSE(schema_accepts(open, R"({"c": 1})"));
}

// Up to draft 7 a $ref's siblings are ignored; from 2019-09 on (the default) they apply too.
TEST(JsonSchemaGrammar, RefSiblingsFollowTheDraft) {
  const std::string defs = R"("definitions":{"t":{"properties":{"a":{"type":"integer"}}}},"properties":{"p":{"$ref":"#/definitions/t","additionalProperties":false}})";
  const std::string old = R"({"$schema":"http://json-schema.org/draft-07/schema#",)" + defs + "}";
  const std::string now = "{" + defs + "}";
  EXPECT_TRUE(schema_accepts(old, R"({"p": {"a": 1, "b": 2}})"));
  EXPECT_FALSE(schema_accepts(old, R"({"p": {"a": "x"}})"));
  EXPECT_FALSE(schema_accepts(now, R"({"p": {"a": 1, "b": 2}})"));
  EXPECT_FALSE(schema_accepts(now, R"({"p": {"a": 1}})"));  // additionalProperties beside the $ref sees no properties
  EXPECT_TRUE(schema_accepts(now, R"({"p": {}})"));
}

}  // namespace
}  // namespace lemma::grammar::testing
