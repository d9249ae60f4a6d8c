// Structured output in the engine: every token of a constrained request is one its grammar allows
// (the row's refused tokens are -inf before sampling), so the output is a text of the grammar ending
// with EOS; unconstrained requests in the same batch keep their tokens; resumed requests (after
// preemption) replay their outputs into the grammar. stories260K with a synthetic vocabulary: the
// model does not care what bytes its ids stand for, so the test can name them.
#include <gtest/gtest.h>

#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lemma/grammar/gbnf.h"
#include "lemma/grammar/json_schema.h"
#include "lemma/grammar/token_constraint.h"
#include "unit/engine/beam_fixture.h"

namespace lemma::testing {
namespace {

constexpr int32_t kEos = 2;

// Ids 10.. spell JSON pieces; every other id is letters (only strings could read them).
std::shared_ptr<const grammar::VocabularyIndex> synthetic_vocabulary() {
  grammar::TokenVocabulary v;
  const int32_t n = stories_model().config().vocab_size;
  v.bytes.resize(static_cast<size_t>(n));
  v.special.assign(static_cast<size_t>(n), false);
  for (int32_t id = 0; id < n; ++id) v.bytes[static_cast<size_t>(id)] = "x" + std::to_string(id);
  const char* pieces[] = {"{", "}", "\"a\"", ":", "1", "2", "\"", "a", "{\"", "7"};
  for (int32_t k = 0; k < static_cast<int32_t>(std::size(pieces)); ++k) v.bytes[static_cast<size_t>(10 + k)] = pieces[k];
  v.special[kEos] = true;
  v.bytes[kEos].clear();
  v.end_ids = {kEos};
  return std::make_shared<const grammar::VocabularyIndex>(std::move(v));
}

std::shared_ptr<const grammar::TokenConstraint> object_constraint() {
  const auto schema = nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"a": {"enum": [1, 2]}}, "required": ["a"], "additionalProperties": false})");
  auto g = std::make_shared<const grammar::Grammar>(grammar::json_schema_grammar(schema, {.compact = true}));
  return std::make_shared<const grammar::TokenConstraint>(grammar::TokenConstraint{g, synthetic_vocabulary(), "test"});
}

std::string text_of(const std::vector<int32_t>& ids, const grammar::VocabularyIndex& vocab) {
  std::string s;
  for (int32_t id : ids)
    if (id != kEos) s += vocab.vocab.bytes[static_cast<size_t>(id)];
  return s;
}

void expect_valid_object(const Finished& f, const grammar::VocabularyIndex& vocab, const std::string& label) {
  ASSERT_FALSE(f.tokens.empty()) << label;
  EXPECT_EQ(f.status, RequestStatus::kFinishedStopped) << label;
  EXPECT_EQ(f.tokens.back(), kEos) << label;
  const std::string text = text_of(f.tokens, vocab);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << label << ": " << text;
  EXPECT_TRUE(j == nlohmann::json::parse(R"({"a":1})") || j == nlohmann::json::parse(R"({"a":2})")) << label << ": " << text;
}

// Requests 1..4 held to `constraint` (odd ids greedy, even ones seeded at temperature 1), each with
// prompt(id), up to 24 tokens or EOS.
void add_object_requests(Engine& engine, const std::shared_ptr<const grammar::TokenConstraint>& constraint,
                         const std::function<std::vector<int32_t>(RequestId)>& prompt) {
  for (RequestId id = 1; id <= 4; ++id) {
    RequestOptions o = greedy(24);
    o.stop.ignore_eos = false;
    o.stop.eos_token_id = kEos;
    o.sampling.constraint = constraint;
    if (id % 2 == 0) {
      o.sampling.temperature = 1.0f;
      o.sampling.seed = id;
    }
    engine.add_request(id, prompt(id), o);
  }
}

class EngineConstrainedTest : public ::testing::Test {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(stories_path()); }
};

TEST_F(EngineConstrainedTest, ConstrainedOutputsFollowTheGrammarUnconstrainedOnesDoNotChange) {
  const auto constraint = object_constraint();
  for (const int32_t blocks : {64, 14}) {  // 14 blocks: requests are preempted and resumed
    SCOPED_TRACE(blocks);
    EngineConfig config = engine_config(blocks, 64);
    config.keep_logits = false;
    Engine engine(stories_model(), config);
    std::map<RequestId, Finished> alone;
    for (RequestId id = 1; id <= 6; ++id) {
      RequestOptions o = greedy(24);
      o.stop.ignore_eos = false;
      o.stop.eos_token_id = kEos;
      if (id % 3 != 0) o.sampling.constraint = constraint;  // ids 3 and 6 stay free
      if (id % 2 == 0) {
        o.sampling.temperature = 1.0f;
        o.sampling.seed = id;
      }
      const auto prompt = prompt_of(4 + 7 * static_cast<int64_t>(id), static_cast<uint32_t>(id));
      if (id % 3 == 0) {  // the reference: alone, unconstrained
        Engine solo(stories_model(), config);
        solo.add_request(id, prompt, o);
        alone = run_to_completion(solo, std::move(alone));
      }
      engine.add_request(id, prompt, o);
    }
    const auto done = run_to_completion(engine);
    for (RequestId id = 1; id <= 6; ++id) {
      if (id % 3 == 0) {
        EXPECT_EQ(done.at(id).tokens, alone.at(id).tokens) << "unconstrained request " << id;
      } else {
        expect_valid_object(done.at(id), *constraint->vocabulary, "request " + std::to_string(id));
      }
    }
    EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
  }
}

// Drafts of constrained requests are checked against the grammar position by position: the same
// outputs with and without speculation (greedy and seeded), and drafts are proposed and confirmed.
TEST_F(EngineConstrainedTest, SpeculationKeepsConstrainedOutputs) {
  const auto constraint = object_constraint();
  std::map<RequestId, Finished> runs[2];
  uint64_t drafts = 0, accepted = 0;
  for (int spec = 0; spec < 2; ++spec) {
    EngineConfig config = engine_config(64);
    config.keep_logits = false;
    config.speculative = {spec ? spec::SpeculativeMethod::kNgram : spec::SpeculativeMethod::kNone, 4, {1, 3}};
    Engine engine(stories_model(), config);
    // Prompts that already hold the grammar's pieces, so prompt lookup proposes them.
    add_object_requests(engine, constraint, [](RequestId id) {
      return std::vector<int32_t>{1, 10, 12, 13, 14, 11, 10, 12, 13, 15, 11, static_cast<int32_t>(20 + id)};
    });
    runs[spec] = run_to_completion(engine);
    if (spec) {
      drafts = engine.scheduler().stats().num_draft_tokens;
      accepted = engine.scheduler().stats().num_accepted_draft_tokens;
    }
  }
  for (RequestId id = 1; id <= 4; ++id) {
    EXPECT_EQ(runs[1].at(id).tokens, runs[0].at(id).tokens) << "request " << id;
    expect_valid_object(runs[1].at(id), *constraint->vocabulary, "request " + std::to_string(id));
  }
  EXPECT_GT(drafts, 0u);
  EXPECT_GT(accepted, 0u);
}

// Token trees from a draft model (the model itself, and its first 3 layers) for constrained requests:
// the target's rows are masked by the grammar before verification, so greedy requests give plain
// constrained decoding's tokens and sampled ones (stochastic trees, recursive rejection sampling)
// still only texts of the grammar.
TEST_F(EngineConstrainedTest, DraftTreesKeepConstrainedOutputs) {
  const auto constraint = object_constraint();
  const auto run = [&](spec::SpeculativeOptions speculative) {
    EngineConfig config = engine_config(64);
    config.keep_logits = false;
    config.speculative = std::move(speculative);
    Engine engine(stories_model(), config);
    add_object_requests(engine, constraint,
                        [](RequestId id) { return prompt_of(5 + static_cast<int64_t>(id), static_cast<uint32_t>(id)); });
    auto done = run_to_completion(engine);
    EXPECT_GT(engine.scheduler().stats().num_draft_tokens, 0u);
    return done;
  };
  const auto plain = run({});
  for (const auto method : {spec::SpeculativeMethod::kDraftModel, spec::SpeculativeMethod::kLayerSkip}) {
    spec::SpeculativeOptions o;
    o.method = method;
    o.num_tokens = 6;
    o.tree_width = 3;
    o.layers = 3;
    o.draft_model = {std::shared_ptr<const Model>{}, &stories_model()};
    const auto spec = run(o);
    for (RequestId id = 1; id <= 4; ++id) {
      if (id % 2 == 1) {
        EXPECT_EQ(spec.at(id).tokens, plain.at(id).tokens) << "greedy request " << id;
      }
      expect_valid_object(spec.at(id), *constraint->vocabulary, "request " + std::to_string(id));
    }
  }
}

// The same requests (options by id, prompts by id) run without (index 0) and with (index 1)
// jump-forward drafts.
struct JumpForwardRuns {
  std::map<RequestId, Finished> runs[2];
  SchedulerStats stats[2];
};

JumpForwardRuns run_with_and_without_jump_forward(RequestId num_requests,
                                                  const std::function<RequestOptions(RequestId)>& options_of) {
  JumpForwardRuns r;
  for (int jump = 0; jump < 2; ++jump) {
    EngineConfig config = engine_config(64);
    config.keep_logits = false;
    config.jump_forward_tokens = jump ? 8 : 0;
    Engine engine(stories_model(), config);
    for (RequestId id = 1; id <= num_requests; ++id)
      engine.add_request(id, prompt_of(3 + 5 * static_cast<int64_t>(id), static_cast<uint32_t>(id)), options_of(id));
    r.runs[jump] = run_to_completion(engine);
    r.stats[jump] = engine.scheduler().stats();
  }
  return r;
}

void print_jump_forward_figure(const char* what, const JumpForwardRuns& r) {
  std::printf("[figure] %s: %llu of %llu forced drafts accepted, %llu steps vs %llu\n", what,
              static_cast<unsigned long long>(r.stats[1].num_accepted_draft_tokens),
              static_cast<unsigned long long>(r.stats[1].num_draft_tokens),
              static_cast<unsigned long long>(r.stats[1].num_steps), static_cast<unsigned long long>(r.stats[0].num_steps));
}

// Jump-forward: the grammar's forced text ({"a": here) is proposed as drafts and verified: the same
// outputs as without it (greedy and seeded, beside an unconstrained request), in fewer steps.
TEST_F(EngineConstrainedTest, JumpForwardKeepsTheOutputsInFewerSteps) {
  const auto constraint = object_constraint();
  const JumpForwardRuns r = run_with_and_without_jump_forward(5, [&](RequestId id) {
    RequestOptions o = greedy(24);
    o.stop.ignore_eos = false;
    o.stop.eos_token_id = kEos;
    if (id != 5) o.sampling.constraint = constraint;
    if (id == 5) o.stop.max_tokens = 4;  // short, so the step count is the constrained requests'
    if (id % 2 == 0) {
      o.sampling.temperature = 1.0f;
      o.sampling.seed = id;
    }
    return o;
  });
  for (RequestId id = 1; id <= 5; ++id) {
    EXPECT_EQ(r.runs[1].at(id).tokens, r.runs[0].at(id).tokens) << "request " << id;
    if (id != 5) expect_valid_object(r.runs[1].at(id), *constraint->vocabulary, "request " + std::to_string(id));
  }
  EXPECT_EQ(r.stats[0].num_draft_tokens, 0u);
  EXPECT_GT(r.stats[1].num_accepted_draft_tokens, 0u);
  EXPECT_LT(r.stats[1].num_steps, r.stats[0].num_steps);
  print_jump_forward_figure("jump-forward", r);
}

// Jump-forward with forced special tokens (as Mistral's [TOOL_CALLS] / [ARGS] in a forced call): ids
// 20 and 21 are special tokens only a token reference reads, and each is the only token its position
// allows, so the proposer drafts them (chained with the forced text between them). Same outputs as
// plain constrained decoding, in fewer steps.
TEST_F(EngineConstrainedTest, JumpForwardProposesForcedSpecialTokens) {
  grammar::TokenVocabulary v = synthetic_vocabulary()->vocab;
  v.special_text.resize(v.bytes.size());
  for (const auto& [id, text] : {std::pair{20, "[TOOL_CALLS]"}, std::pair{21, "[ARGS]"}}) {
    v.special[size_t(id)] = true;
    v.bytes[size_t(id)].clear();
    v.special_text[size_t(id)] = text;
  }
  const auto vocab = std::make_shared<const grammar::VocabularyIndex>(std::move(v));
  auto g = grammar::resolve_tokens(grammar::gbnf_grammar(R"(root ::= <[20]> "{\"a\"" <[21]> ("1" | "2") "}")"),
                                   vocab->vocab);
  const auto constraint = std::make_shared<const grammar::TokenConstraint>(
      grammar::TokenConstraint{std::make_shared<const grammar::Grammar>(std::move(g)), vocab, "forced call"});
  const JumpForwardRuns r = run_with_and_without_jump_forward(3, [&](RequestId id) {
    RequestOptions o = greedy(24);
    o.stop.ignore_eos = false;
    o.stop.eos_token_id = kEos;
    o.sampling.constraint = constraint;
    if (id == 2) {
      o.sampling.temperature = 1.0f;
      o.sampling.seed = id;
    }
    return o;
  });
  for (RequestId id = 1; id <= 3; ++id) {
    EXPECT_EQ(r.runs[1].at(id).tokens, r.runs[0].at(id).tokens) << "request " << id;
    ASSERT_GE(r.runs[1].at(id).tokens.size(), 3u);
    EXPECT_EQ(r.runs[1].at(id).tokens.front(), 20) << "request " << id;
    EXPECT_EQ(r.runs[1].at(id).tokens.back(), kEos) << "request " << id;
  }
  EXPECT_GT(r.stats[1].num_accepted_draft_tokens, 0u);
  EXPECT_LT(r.stats[1].num_steps, r.stats[0].num_steps);
  print_jump_forward_figure("jump-forward with forced special tokens", r);
}

// A grammar that allows nothing more (complete, EOS ignored) ends its own request, not the batch.
TEST_F(EngineConstrainedTest, AnExhaustedGrammarFailsOnlyItsRequest) {
  const auto constraint = object_constraint();
  EngineConfig config = engine_config(64);
  config.keep_logits = false;
  Engine engine(stories_model(), config);
  RequestOptions exhausted = greedy(30);  // ignore_eos: the grammar ends before max_tokens
  exhausted.stop.eos_token_id = kEos;
  exhausted.sampling.constraint = constraint;
  engine.add_request(1, prompt_of(9, 1), exhausted);
  engine.add_request(2, prompt_of(9, 2), greedy(30));
  const auto done = run_to_completion(engine);
  EXPECT_EQ(done.at(1).status, RequestStatus::kFinishedFailed);
  EXPECT_EQ(done.at(2).status, RequestStatus::kFinishedLength);
  EXPECT_EQ(done.at(2).tokens.size(), 30u);
  EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
}

// Beam search masks each beam's row by its own grammar state (a fork replays its outputs into a
// fresh one): all W hypotheses are texts of the grammar, distinct, also when beams are preempted.
TEST_F(EngineConstrainedTest, EveryBeamFollowsItsGrammar) {
  const auto constraint = object_constraint();
  for (const int32_t blocks : {64, 12}) {
    SCOPED_TRACE(blocks);
    EngineConfig config = engine_config(blocks, 64);
    config.keep_logits = false;
    Engine engine(stories_model(), config);
    for (RequestId id : {10, 20}) {
      RequestOptions o = beam_options(3, 24);
      o.stop.ignore_eos = false;
      o.stop.eos_token_id = kEos;
      o.sampling.constraint = constraint;
      engine.add_request(id, prompt_of(9 + static_cast<int64_t>(id), static_cast<uint32_t>(id)), o, 3);
    }
    engine.add_request(1, prompt_of(40, 1), greedy(40));  // competes for blocks
    const BeamResults got = run_beams(engine, {10, 20});
    for (RequestId id : {10, 20}) {
      ASSERT_EQ(got.at(id).size(), 3u);
      for (size_t i = 0; i < 3; ++i) {
        Finished f;
        f.tokens = got.at(id)[i].tokens;
        f.status = got.at(id)[i].status;
        expect_valid_object(f, *constraint->vocabulary, fmt::format("request {} choice {}", id, i));
        if (i > 0) {
          EXPECT_NE(got.at(id)[i].tokens, got.at(id)[i - 1].tokens);
        }
      }
    }
    EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
  }
}

}  // namespace
}  // namespace lemma::testing
