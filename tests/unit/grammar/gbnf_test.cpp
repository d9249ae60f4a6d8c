#include "lemma/grammar/gbnf.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar_test_util.h"
#include "lemma/base/error.h"

namespace lemma::grammar {
namespace {

using testing::grammar_accepts;

bool accepts(const std::string& gbnf, const std::string& text) { return grammar_accepts(gbnf_grammar(gbnf), text); }

// The InvalidArgument message of compiling `gbnf` (empty when it compiles).
std::string error_of(const std::string& gbnf) {
  try {
    gbnf_grammar(gbnf);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Gbnf, LiteralsSequencesAndAlternatives) {
  const std::string g = R"(root ::= "yes" | "no" " " "way")";
  EXPECT_TRUE(accepts(g, "yes"));
  EXPECT_TRUE(accepts(g, "no way"));
  EXPECT_FALSE(accepts(g, "no"));
  EXPECT_FALSE(accepts(g, "yes way"));
  EXPECT_TRUE(accepts(R"(root ::= "" | "a")", ""));
}

TEST(Gbnf, RulesMayBeReferencedBeforeTheirDefinition) {
  const std::string g = "root ::= greeting \" \" name\n"
                        "name ::= [A-Z] [a-z]*\n"
                        "greeting ::= \"hi\" | \"hello\"\n";
  EXPECT_TRUE(accepts(g, "hi Bob"));
  EXPECT_TRUE(accepts(g, "hello X"));
  EXPECT_FALSE(accepts(g, "hello bob"));
}

TEST(Gbnf, CharacterClasses) {
  const std::string g = R"(root ::= [a-c0-9_] [^a-z"\\] [\]\-])";
  EXPECT_TRUE(accepts(g, "b5]"));
  EXPECT_TRUE(accepts(g, "_Q-"));
  EXPECT_TRUE(accepts(g, "aé]"));  // a negated class takes any other character, multi-byte too
  EXPECT_FALSE(accepts(g, "dA]"));
  EXPECT_FALSE(accepts(g, "ax]"));
  EXPECT_FALSE(accepts(g, "a\"]"));
  EXPECT_FALSE(accepts(g, "a\\]"));
  EXPECT_FALSE(accepts(R"(root ::= [α-ω]+)", "λόγος"));  // ό (with its accent) is outside α-ω
  EXPECT_TRUE(accepts(R"(root ::= [α-ω]+)", "λογος"));
}

TEST(Gbnf, DotIsAnyOneCharacterInUtf8) {
  const std::string g = R"(root ::= "<" . ">")";
  for (const char* ok : {"<a>", "<é>", "<中>", "<😀>", "<\n>"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"<>", "<ab>", "<\xC3>", "<\xFF>"}) EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(Gbnf, Quantifiers) {
  EXPECT_TRUE(accepts(R"(root ::= "a"* "b"+ "c"?)", "b"));
  EXPECT_TRUE(accepts(R"(root ::= "a"* "b"+ "c"?)", "aabbc"));
  EXPECT_FALSE(accepts(R"(root ::= "a"* "b"+ "c"?)", "acc"));
  const std::string counted = R"(root ::= [0-9]{2} "-" [a-z]{1,3} "-" "x"{2,} "-" "y"{,1})";
  EXPECT_TRUE(accepts(counted, "42-a-xx-"));
  EXPECT_TRUE(accepts(counted, "42-abc-xxxxx-y"));
  EXPECT_FALSE(accepts(counted, "4-a-xx-"));
  EXPECT_FALSE(accepts(counted, "42-abcd-xx-"));
  EXPECT_FALSE(accepts(counted, "42-a-x-"));
  EXPECT_FALSE(accepts(counted, "42-a-xx-yy"));
  EXPECT_TRUE(accepts(R"(root ::= ("ab" | "c"){ 2 , 3 })", "abcab"));
  EXPECT_FALSE(accepts(R"(root ::= ("ab" | "c"){2,3})", "abcabc" "c"));
}

TEST(Gbnf, RecursionBalancedParentheses) {
  const std::string g = "root ::= item*\nitem ::= \"(\" root \")\" | [a-z]\n";
  for (const char* ok : {"", "()", "(a(b)c)", "(()())x"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"(", "())", ")(", "(A)"}) EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(Gbnf, StringEscapes) {
  EXPECT_TRUE(accepts(R"(root ::= "a\nb\tc\rd\\e\"f")", "a\nb\tc\rd\\e\"f"));
  EXPECT_TRUE(accepts(R"(root ::= "\x41\u00e9\U0001F600")", "Aé😀"));
  EXPECT_TRUE(accepts(R"(root ::= [\x30-\x39\u4e00])", "7"));
  EXPECT_TRUE(accepts(R"(root ::= [\x30-\x39\u4e00])", "一"));
}

TEST(Gbnf, CommentsAndNewlinesInsideGroups) {
  const std::string g = "# a grammar\n"
                        "root ::= (   # a group may span lines\n"
                        "    \"a\"\n"
                        "  | \"b\"   # a comment after an alternative\n"
                        "  ) tail\n"
                        "\n"
                        "tail ::=\n"
                        "  \"!\"\n"
                        "  | \"?\"\n";
  EXPECT_TRUE(accepts(g, "a!"));
  EXPECT_TRUE(accepts(g, "b?"));
  EXPECT_FALSE(accepts(g, "c!"));
  EXPECT_TRUE(accepts("root ::= \"a\"\r\nb ::= \"c\"\r\n", "a"));  // CRLF line ends
}

// A JSON grammar in the style of llama.cpp's grammars/json.gbnf.
const char* kJson = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt/] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

TEST(Gbnf, JsonGrammar) {
  for (const char* ok : {R"({})", R"({"a": 1})", R"({"a": [1, -2.5e3, "x\n\u00e9", true, null], "b": {"c": false}})",
                         "{\n  \"k\": \"中\"\n}"})
    EXPECT_TRUE(accepts(kJson, ok)) << ok;
  for (const char* bad : {R"([])", R"({"a": })", R"({"a": 01x})", R"({"a": "\q"})", "{\"a\": \"\x01\"}", R"({"a" 1})"})
    EXPECT_FALSE(accepts(kJson, bad)) << bad;
}

TEST(Gbnf, UndefinedRuleIsNamedWithItsPlace) {
  const std::string e = error_of("root ::= \"a\" missing-rule\n");
  EXPECT_NE(e.find("missing-rule"), std::string::npos) << e;
  EXPECT_NE(e.find("line 1, column 14"), std::string::npos) << e;
}

TEST(Gbnf, MissingRootIsAnError) {
  const std::string e = error_of("start ::= \"a\"\n");
  EXPECT_NE(e.find("root"), std::string::npos) << e;
  EXPECT_NE(error_of("").find("root"), std::string::npos);
}

TEST(Gbnf, SyntaxErrorsNameLineColumnAndWhatWasExpected) {
  const auto expect_error = [](const std::string& gbnf, const std::string& where, const std::string& what) {
    const std::string e = error_of(gbnf);
    EXPECT_NE(e.find(where), std::string::npos) << gbnf << " -> " << e;
    EXPECT_NE(e.find(what), std::string::npos) << gbnf << " -> " << e;
  };
  expect_error("root ::= \"a\"\nx = \"b\"\n", "line 2, column 3", "'::='");
  expect_error("root ::= (\"a\" | \"b\"\n", "line 2, column 1", "')' to close the '(' at line 1, column 10");
  expect_error("root ::= \"abc\n", "line 1, column 14", "'\"' to close the string");
  expect_error("root ::= [a-z\n", "line 1, column 14", "']' to close the character class");
  expect_error("root ::= \"a\" @\n", "line 1, column 14", "a rule element");
  expect_error("root ::= \"\\q\"\n", "line 1, column 12", "an escape");
  expect_error("root ::= \"\\x4\"\n", "line 1, column 14", "2 hex digits");
  expect_error("root ::= \"a\"{3,1}\n", "line 1", "maximum below its minimum");
  expect_error("root ::= \"a\"{x}\n", "line 1, column 14", "a repetition count");
  expect_error("root ::= [z-a]\n", "line 1, column 11", "end below its start");
  expect_error("root ::= \"a\"\nroot ::= \"b\"\n", "line 2, column 1", "defined twice");
  expect_error("root ::= \"\\uD800\"\n", "line 1, column 11", "not a Unicode scalar value");
}

TEST(Gbnf, LeftRecursionIsRefusedNamingTheRule) {
  std::string e = error_of("root ::= \"a\" x\nx ::= \"\"? y \"b\" | \"b\"\ny ::= x\n");
  EXPECT_NE(e.find("line 2, column 1: rule 'x' is left-recursive (x -> y -> x)"), std::string::npos) << e;
  e = error_of("root ::= root \"a\" | \"a\"\n");
  EXPECT_NE(e.find("'root' is left-recursive"), std::string::npos) << e;
  EXPECT_EQ(error_of("root ::= \"a\" root | \"b\"\n"), "");  // right recursion is fine
}

}  // namespace
}  // namespace lemma::grammar
