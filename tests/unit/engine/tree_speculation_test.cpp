// Tree speculation (G12) through the scheduler and the runner on stories260K: drafts given as token
// trees, verified in one forward each step, give exactly the tokens plain decoding gives (greedy and
// seeded sampling), batched, with chunked prefill and under preemption, for f32, bf16 and int8 KV
// caches. The drafts come from an oracle that knows plain decoding's tokens and hides them in trees
// among decoys placed before them (so every confirmed path sits in slots other than its chain slots
// and the runner must move its K/V), sometimes cut short by a wrong token or shadowed by a decoy of
// the same token; and from the n-gram tree proposer on text that repeats in several ways.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "lemma/base/error.h"
#include "lemma/runtime/model_runner.h"
#include "lemma/sched/scheduler.h"
#include "lemma/spec/ngram_tree_proposer.h"
#include "lemma/spec/speculative_options.h"
#include "unit/engine/engine_fixture.h"
#include "unit/model/random_model.h"

namespace lemma::testing {
namespace {

class TreeSpeculationTest : public ::testing::Test {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(stories_path()); }
};

// Plain decoding's tokens, hidden in trees: under each truth node (and under the last token) a decoy
// sibling comes first two times in three, one in six of them drafting the truth's own token (the
// runner then follows the decoy, the first child with that token, whose subtree holds nothing
// true); one tree in three has a wrong truth token at a random depth.
class OracleTrees final : public DraftSource {
 public:
  OracleTrees(const std::map<RequestId, std::vector<int32_t>>& plain, int64_t vocab) : plain_(plain), vocab_(vocab) {}

  void propose(std::span<const DraftQuery> queries, std::vector<Drafts>& out) override {
    out.resize(queries.size());
    for (size_t q = 0; q < queries.size(); ++q) {
      const DraftQuery& query = queries[q];
      Drafts& d = out[q];
      d.tokens.clear();
      d.parents.clear();
      d.probs.reset();
      const auto& truth = plain_.at(query.id);
      const auto done = static_cast<size_t>(static_cast<int64_t>(query.tokens.size()) - query.num_prompt_tokens);
      std::mt19937 rng(static_cast<uint32_t>(query.id * 1000003 + done));
      std::vector<int32_t> path(truth.begin() + static_cast<std::ptrdiff_t>(std::min(done, truth.size())), truth.end());
      if (rng() % 3 == 0 && !path.empty()) path[rng() % path.size()] = other_than(path[rng() % path.size()], rng);
      const auto budget = static_cast<size_t>(query.max_drafts);
      int32_t parent = -1;
      for (size_t k = 0; k < path.size(); ++k) {
        if (d.tokens.size() < budget && rng() % 3 != 0) {
          d.tokens.push_back(rng() % 6 == 0 ? path[k] : other_than(path[k], rng));
          d.parents.push_back(parent);
        }
        if (d.tokens.size() >= budget) break;
        d.tokens.push_back(path[k]);
        d.parents.push_back(parent);
        parent = static_cast<int32_t>(d.tokens.size() - 1);
      }
      if (!d.tokens.empty()) ++num_trees_;
    }
  }
  uint64_t num_trees() const { return num_trees_; }

 private:
  int32_t other_than(int32_t token, std::mt19937& rng) const {
    return static_cast<int32_t>((token + 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(vocab_ - 1))) % vocab_);
  }
  const std::map<RequestId, std::vector<int32_t>>& plain_;
  int64_t vocab_;
  uint64_t num_trees_ = 0;
};

struct Setting {
  int32_t num_blocks = 64;
  int64_t token_budget = 256;
  KvDtype kv_dtype = KvDtype::kF32;
  int num_drafts = 8;
};

struct StepsRun {
  std::map<RequestId, std::vector<int32_t>> tokens;
  SchedulerStats stats;
};

const std::vector<int32_t> kStory = {1, 403, 407, 261, 378, 281, 403, 407, 261, 378, 281, 403, 407};

// Six requests (two story prompts, four random; odd ids greedy, even ids seeded at temperature 0.8)
// through a Scheduler and a ModelRunner, as the engine steps them.
StepsRun run_requests(const Setting& s, DraftSource* source, const std::vector<std::vector<int32_t>>& prompts = {}) {
  SchedulerConfig sc;
  sc.max_num_batched_tokens = s.token_budget;
  sc.max_num_seqs = 16;
  sc.max_model_len = 256;
  sc.speculative.num_tokens = source != nullptr ? s.num_drafts : 0;
  KvManagerConfig kc;
  kc.num_device_blocks = s.num_blocks;
  kc.block_size = 16;
  kc.watermark = 0.0;
  Scheduler scheduler(sc, kc);
  scheduler.set_draft_source(source);
  ModelRunnerConfig rc;
  rc.num_device_blocks = s.num_blocks;
  rc.block_size = 16;
  rc.max_num_seqs = 16;
  rc.kv_dtype = s.kv_dtype;
  ModelRunner runner(stories_model(), rc);
  for (RequestId id = 1; id <= 6; ++id) {
    RequestOptions o = greedy(48);
    if (id % 2 == 0) {
      o.sampling.temperature = 0.8f;
      o.sampling.seed = 7 * id;
    }
    std::vector<int32_t> prompt = !prompts.empty() ? prompts[static_cast<size_t>(id - 1) % prompts.size()]
                                  : id <= 2        ? kStory
                                                   : prompt_of(5 + 9 * static_cast<int64_t>(id), static_cast<uint32_t>(id));
    scheduler.add_request(Request(id, std::move(prompt), o));
  }
  StepsRun run;
  while (scheduler.has_unfinished_requests()) {
    const StepPlan plan = scheduler.schedule();
    EXPECT_TRUE(plan.has_work());
    if (!plan.has_work()) break;
    RunnerOutput ran = runner.run(plan);
    for (const RequestOutput& o : scheduler.update(plan, std::move(ran.result))) {
      auto& t = run.tokens[o.id];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      EXPECT_NE(o.status, RequestStatus::kFinishedFailed) << "request " << o.id;
      if (!o.finished()) continue;
      runner.forget(o.id);
      if (source != nullptr) source->forget(o.id);
    }
    scheduler.check_invariants();
  }
  run.stats = scheduler.stats();
  return run;
}

void expect_oracle_trees_change_no_token(const Setting& s, const char* label) {
  SCOPED_TRACE(label);
  const StepsRun plain = run_requests(s, nullptr);
  OracleTrees oracle(plain.tokens, stories_model().config().vocab_size);
  const StepsRun tree = run_requests(s, &oracle);
  ASSERT_EQ(plain.tokens.size(), 6u);
  for (const auto& [id, tokens] : plain.tokens) EXPECT_EQ(tree.tokens.at(id), tokens) << "request " << id;
  EXPECT_GT(oracle.num_trees(), 0u);
  EXPECT_GT(tree.stats.num_accepted_draft_tokens, 0u);
  std::printf("[figure] oracle trees, %s: %llu trees, %llu draft nodes, %llu accepted, %llu steps vs %llu plain\n",
              label, static_cast<unsigned long long>(oracle.num_trees()),
              static_cast<unsigned long long>(tree.stats.num_draft_tokens),
              static_cast<unsigned long long>(tree.stats.num_accepted_draft_tokens),
              static_cast<unsigned long long>(tree.stats.num_steps), static_cast<unsigned long long>(plain.stats.num_steps));
}

TEST_F(TreeSpeculationTest, OracleTreesGiveThePlainTokensBatched) {
  expect_oracle_trees_change_no_token({}, "batched");
}

TEST_F(TreeSpeculationTest, OracleTreesGiveThePlainTokensWithChunkedPrefill) {
  expect_oracle_trees_change_no_token({64, 24}, "chunked");
}

TEST_F(TreeSpeculationTest, OracleTreesGiveThePlainTokensUnderPreemption) {
  expect_oracle_trees_change_no_token({14, 64}, "preemption");
}

TEST_F(TreeSpeculationTest, OracleTreesGiveThePlainTokensWithQuantizedKv) {
  expect_oracle_trees_change_no_token({64, 256, KvDtype::kBf16}, "bf16 kv");
  expect_oracle_trees_change_no_token({64, 256, KvDtype::kInt8}, "int8 kv");
}

TEST_F(TreeSpeculationTest, NgramTreesGiveThePlainTokens) {
  // Prompts where the last tokens occurred before with different continuations, so the proposer
  // has branches to offer.
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 403, 407, 261, 378, 281, 403, 407, 300, 301, 403, 407, 261, 379, 403, 407},
      {1, 50, 60, 70, 80, 50, 60, 71, 81, 50, 60, 72, 82, 50, 60}};
  const Setting s;
  const StepsRun plain = run_requests(s, nullptr, prompts);
  spec::NgramTreeProposer proposer({{2, 4}, 3});
  const StepsRun tree = run_requests(s, &proposer, prompts);
  for (const auto& [id, tokens] : plain.tokens) EXPECT_EQ(tree.tokens.at(id), tokens) << "request " << id;
  EXPECT_GT(tree.stats.num_draft_tokens, 0u);
  std::printf("[figure] n-gram trees: %llu draft nodes, %llu accepted, %llu steps vs %llu plain\n",
              static_cast<unsigned long long>(tree.stats.num_draft_tokens),
              static_cast<unsigned long long>(tree.stats.num_accepted_draft_tokens),
              static_cast<unsigned long long>(tree.stats.num_steps), static_cast<unsigned long long>(plain.stats.num_steps));
}

TEST(TreeSpeculationOptions, NgramTreesRefuseSlidingWindowModels) {
  spec::SpeculativeOptions o;
  o.method = spec::SpeculativeMethod::kNgramTree;
  o.num_tokens = 4;
  EXPECT_NE(spec::make_draft_source(o, make_random_model(small_config(), 1).build(), {}), nullptr);
  ModelConfig windowed = small_config();
  windowed.sliding_window.assign(static_cast<size_t>(windowed.num_layers), 8);
  EXPECT_THROW(spec::make_draft_source(o, make_random_model(windowed, 1).build(), {}), InvalidArgument);
}

}  // namespace
}  // namespace lemma::testing

namespace lemma::testing {
namespace {

TEST(TreeSpeculationOptions, DraftTreesRefuseSlidingWindowModelsAndBadWidths) {
  spec::SpeculativeOptions o;
  o.method = spec::SpeculativeMethod::kLayerSkip;
  o.num_tokens = 4;
  o.layers = 1;
  o.tree_width = 2;
  const Model plain = make_random_model(small_config(), 1).build();
  EXPECT_NE(spec::make_draft_source(o, plain, {1, 16, 1, 0, KvDtype::kF32}), nullptr);
  ModelConfig windowed = small_config();
  windowed.sliding_window.assign(static_cast<size_t>(windowed.num_layers), 8);
  const Model windowed_model = make_random_model(windowed, 1).build();
  EXPECT_THROW(spec::make_draft_source(o, windowed_model, {1, 16, 1, 0, KvDtype::kF32}), InvalidArgument);
  o.tree_width = 1;  // a chain needs no tree attention
  EXPECT_NE(spec::make_draft_source(o, windowed_model, {1, 16, 1, 0, KvDtype::kF32}), nullptr);
  for (const int width : {0, 17}) {
    o.tree_width = width;
    EXPECT_THROW(spec::make_draft_source(o, plain, {1, 16, 1, 0, KvDtype::kF32}), InvalidArgument) << width;
  }
}

// The shape of a draft model's tree: W candidates per position, the first extended, as far as the
// node budget goes; siblings distinct and carrying their parent position's row; greedy candidates are
// the draft's best tokens, the first the chain's draft.
TEST(DraftModelTrees, CandidatesPerPositionUnderTheFirst) {
  ModelConfig config = small_config();
  const Model draft = make_random_model(config, 3).build();
  const auto vocab = static_cast<size_t>(config.vocab_size);
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  const auto propose = [&](int width, float temperature) {
    spec::DraftModelProposer proposer(draft, config.vocab_size, {8, 16, 1, 7, KvDtype::kF32, width});
    SamplingParams params;
    params.temperature = temperature;
    params.seed = 21;
    const DraftQuery query{9, tokens, 3, 7, &params};
    std::vector<Drafts> out;
    proposer.propose(std::span(&query, 1), out);
    return out.at(0);
  };
  const Drafts tree = propose(3, 1.0f);
  ASSERT_EQ(tree.tokens.size(), 7u);
  EXPECT_EQ(tree.parents, (std::vector<int32_t>{-1, -1, -1, 0, 0, 0, 3}));
  ASSERT_NE(tree.probs, nullptr);
  ASSERT_EQ(tree.probs->size(), 7 * vocab);
  const auto row = [&](size_t d) { return std::vector<float>(tree.probs->begin() + std::ptrdiff_t(d * vocab), tree.probs->begin() + std::ptrdiff_t((d + 1) * vocab)); };
  for (const auto& [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{3, 4}, std::pair{3, 5}}) {
    EXPECT_NE(tree.tokens[static_cast<size_t>(a)], tree.tokens[static_cast<size_t>(b)]);
    EXPECT_EQ(row(static_cast<size_t>(a)), row(static_cast<size_t>(b)));
  }
  EXPECT_NE(row(0), row(3));
  // The chain's first draft is the tree's first candidate (same draw), and a chain carries no parents.
  const Drafts chain = propose(1, 1.0f);
  EXPECT_TRUE(chain.parents.empty());
  EXPECT_EQ(chain.tokens.at(0), tree.tokens[0]);
  // Greedy: the draft's best tokens by logit, the first its argmax (the chain's draft), no rows.
  const Drafts greedy_tree = propose(3, 0.0f), greedy_chain = propose(1, 0.0f);
  EXPECT_EQ(greedy_tree.probs, nullptr);
  EXPECT_EQ(greedy_tree.tokens.front(), greedy_chain.tokens.front());
  std::vector<double> logits = reference_forward(make_random_model(config, 3), tokens);
  const double* last = logits.data() + (tokens.size() - 1) * vocab;
  std::vector<int32_t> order(vocab);
  for (size_t i = 0; i < vocab; ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return last[x] > last[y]; });
  EXPECT_EQ(std::vector<int32_t>(greedy_tree.tokens.begin(), greedy_tree.tokens.begin() + 3),
            std::vector<int32_t>(order.begin(), order.begin() + 3));
}

}  // namespace
}  // namespace lemma::testing
