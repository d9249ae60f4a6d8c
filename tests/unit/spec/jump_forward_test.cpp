// Jump-forward drafts: forced text cut into tokens by longest match (special tokens never), and the
// source proposes them only for constrained requests, leaving the others to the inner proposer.
#include "lemma/spec/jump_forward.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lemma/grammar/json_schema.h"
#include "lemma/spec/ngram_proposer.h"

namespace lemma::spec {
namespace {

grammar::TokenVocabulary vocabulary(const std::vector<std::string>& spellings) {
  grammar::TokenVocabulary v;
  v.bytes = spellings;
  v.special.assign(spellings.size(), false);
  return v;
}

TEST(TokenSpellings, LongestMatchFirstLowestIdOfEqualSpellingsNoSpecials) {
  auto v = vocabulary({"<s>", "{", "{\"", "\"", "a", "ab", "\":", ":", "ab", " "});
  v.special[0] = true;
  const TokenSpellings s(v);
  EXPECT_EQ(s.longest_match("{\"ab\": ", 10), (std::vector<int32_t>{2, 5, 6, 9}));
  EXPECT_EQ(s.longest_match("{\"ab\": ", 2), (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(s.longest_match("<s>", 10), (std::vector<int32_t>{}));  // only the special token spells it
  EXPECT_EQ(s.longest_match("a?b", 10), (std::vector<int32_t>{4}));  // stops where nothing matches
}

TEST(JumpForwardSource, ProposesForcedTokensForConstrainedRequestsOnly) {
  auto v = vocabulary({"{", "\"", "name", "\":", " ", "\"x", "x", "}", "\"name\"", ":"});
  v.end_ids = {};
  auto index = std::make_shared<const grammar::VocabularyIndex>(std::move(v));
  const auto schema = nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false})");
  auto g = std::make_shared<const grammar::Grammar>(grammar::json_schema_grammar(schema, {.compact = true}));
  SamplingParams constrained;
  constrained.constraint = std::make_shared<const grammar::TokenConstraint>(grammar::TokenConstraint{g, index, "t"});
  SamplingParams free;
  JumpForwardSource source(std::make_unique<NgramProposer>(NgramConfig{1, 2}), 2);
  // Prompt [5, 6] then output "{" (token 0): the grammar forces "\"name\":\"" next.
  const std::vector<int32_t> tokens_a = {5, 6, 0};
  const std::vector<int32_t> tokens_b = {6, 7, 6, 7, 6};  // prompt lookup proposes 7, 6
  std::vector<DraftQuery> queries = {{1, tokens_a, 2, 8, &constrained}, {2, tokens_b, 1, 8, &free}};
  std::vector<Drafts> out;
  source.propose(queries, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].tokens, (std::vector<int32_t>{8, 9, 1}));  // "name" then : then the string's opening quote
  EXPECT_EQ(out[0].probs, nullptr);
  EXPECT_EQ(out[1].tokens, (std::vector<int32_t>{7, 6}));  // the inner source, capped at 2
  // The source follows the outputs: after "{\"name\":\"" a free string forces nothing.
  const std::vector<int32_t> tokens_c = {5, 6, 0, 8, 9, 1};
  queries = {{1, tokens_c, 2, 8, &constrained}};
  source.propose(queries, out);
  EXPECT_TRUE(out[0].tokens.empty());
  source.forget(1);
  source.forget(1);  // idempotent
}

}  // namespace
}  // namespace lemma::spec
