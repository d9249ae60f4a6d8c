// Jump-forward drafts: forced text cut into tokens by longest match (special tokens never), and the
// source proposes them only for constrained requests, leaving the others to the inner proposer.
#include "lemma/spec/jump_forward.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lemma/grammar/gbnf.h"
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


// A toy greedy "model": among the tokens the grammar allows, the one with the highest fixed score.
int32_t greedy_pick(grammar::ConstraintState& state, int32_t vocab_size) {
  int32_t best = -1;
  uint32_t best_score = 0;
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (!grammar::mask_allows(state.allowed(), id)) continue;
    const uint32_t score = (uint32_t(id) * 2654435761u) >> 8;
    if (best < 0 || score > best_score) best = id, best_score = score;
  }
  return best;
}

// A forced Mistral-style call: the special [TOOL_CALLS] token, a name, the special [ARGS] token,
// then JSON. Jump-forward proposes the special tokens too (they are the mask's only token), so
// decoding with its drafts, each verified against the model's own pick, gives exactly the plain
// constrained output in fewer steps (forwards).
TEST(JumpForwardSource, ProposesForcedSpecialTokensAndKeepsTheConstrainedOutput) {
  grammar::TokenVocabulary v;
  for (const char* special : {"[TOOL_CALLS]", "[ARGS]", "</s>"}) {
    v.bytes.emplace_back();
    v.special.push_back(true);
    v.special_text.emplace_back(special);
  }
  v.end_ids = {2};
  for (const char* text : {"get", "_time", "g", "e", "t", "_", "i", "m", "{\"", "zone", "\":", " \"", "utc", "cet", "\"}",
                           "z", "o", "n", "u", "c", "\"", ":", " ", "{", "}", "a"}) {
    v.bytes.emplace_back(text);
    v.special.push_back(false);
    v.special_text.emplace_back();
  }
  const auto index = std::make_shared<const grammar::VocabularyIndex>(v);
  const int32_t n = index->vocab.size();
  auto g = grammar::gbnf_grammar(R"(root ::= <[0]> "get_time" <[1]> "{\"zone\": \"" ("utc" | "cet") "\"}")");
  g = grammar::resolve_tokens(std::move(g), index->vocab);
  SamplingParams constrained;
  constrained.constraint = std::make_shared<const grammar::TokenConstraint>(
      grammar::TokenConstraint{std::make_shared<const grammar::Grammar>(std::move(g)), index, "forced call"});

  // Plain constrained decoding: one token per step until the model ends.
  std::vector<int32_t> plain;
  {
    grammar::ConstraintState state(*constrained.constraint);
    for (int32_t pick; (pick = greedy_pick(state, n)) != 2;) {
      ASSERT_GE(pick, 0);
      ASSERT_TRUE(state.accept(pick));
      plain.push_back(pick);
    }
  }
  // With jump-forward drafts: each step keeps the drafts the model agrees with, plus its own pick.
  JumpForwardSource source(nullptr, 0);
  grammar::ConstraintState verifier(*constrained.constraint);
  std::vector<int32_t> tokens = {7};  // a one-token prompt
  int steps = 0;
  bool first = true;
  while (true) {
    std::vector<Drafts> out;
    const std::vector<DraftQuery> queries = {{1, tokens, 1, 16, &constrained}};
    source.propose(queries, out);
    if (first) {  // the marker token opens the draft, and the forced text and [ARGS] follow it
      ASSERT_GE(out[0].tokens.size(), 2u);
      EXPECT_EQ(out[0].tokens[0], 0);
      first = false;
    }
    ++steps;
    bool ended = false;
    for (size_t k = 0; k <= out[0].tokens.size(); ++k) {
      const int32_t pick = greedy_pick(verifier, n);
      if (pick == 2) {
        ended = true;
        break;
      }
      ASSERT_TRUE(verifier.accept(pick));
      tokens.push_back(pick);
      if (k == out[0].tokens.size() || out[0].tokens[k] != pick) break;  // a rejected draft ends the step
    }
    if (ended) break;
    ASSERT_LT(steps, 100);
  }
  EXPECT_EQ(std::vector<int32_t>(tokens.begin() + 1, tokens.end()), plain);
  EXPECT_LT(steps, int(plain.size()) + 1) << "the final step reads the end token";
  EXPECT_LE(steps, 4);  // [TOOL_CALLS] .. [ARGS] {"zone": " in one step, the choice, the rest, the end
}

}  // namespace
}  // namespace lemma::spec
