// Speculative decoding with a draft model and with layer-skip self-speculation in the engine loop,
// as chains and as token trees (--speculative-tree-width): greedy outputs are plain decoding's tokens
// (stories260K and the tiny-qwen3 preset, each drafting for the other); seeded sampling with
// stochastic drafts is reproducible and, by exact (recursive) rejection sampling, distributed as
// plain decoding (a chi-square test against the exact joint law of three tokens, computed in float64
// from a tiny random target, with a different random model as the draft, for a chain and trees).
#include <gtest/gtest.h>

#include <cmath>

#include "golden_models.h"
#include "lemma/base/error.h"
#include "unit/engine/engine_fixture.h"
#include "unit/model/random_model.h"

namespace lemma::testing {
namespace {

class EngineDraftModelTest : public ::testing::Test {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(stories_path()); }
};

const std::vector<int32_t> kStory = {1, 403, 407, 261, 378, 281, 403, 407, 261, 378, 281, 403, 407};

// stories260K as a draft of itself, owned elsewhere (the fixture's static model).
std::shared_ptr<const Model> stories_as_draft() { return {std::shared_ptr<const Model>{}, &stories_model()}; }

struct DraftRun {
  std::map<RequestId, Finished> done;
  SchedulerStats stats;
};

DraftRun run(const Model& target, const EngineConfig& config, float temperature, int num_requests = 6) {
  Engine engine(target, config);
  for (RequestId id = 1; id <= static_cast<RequestId>(num_requests); ++id) {
    RequestOptions o = greedy(40);
    o.sampling.temperature = temperature;
    if (temperature > 0.0f) o.sampling.seed = 100 + id;
    engine.add_request(id, id == 1 ? kStory : prompt_of(4 + 7 * static_cast<int64_t>(id), static_cast<uint32_t>(id)), o);
  }
  DraftRun r;
  r.done = run_to_completion(engine);
  r.stats = engine.scheduler().stats();
  EXPECT_EQ(r.stats.kv_blocks_used, 0);
  EXPECT_EQ(engine.runner().num_tracked(), 0u);
  engine.scheduler().check_invariants();
  return r;
}

DraftRun run(const EngineConfig& config, float temperature, int num_requests = 6) {
  return run(stories_model(), config, temperature, num_requests);
}

spec::SpeculativeOptions draft_options(spec::SpeculativeMethod method, int k, int layers = 0) {
  spec::SpeculativeOptions o;
  o.method = method;
  o.num_tokens = k;
  o.layers = layers;
  if (method == spec::SpeculativeMethod::kDraftModel) o.draft_model = stories_as_draft();
  return o;
}

double acceptance(const SchedulerStats& s) {
  return s.num_draft_tokens ? static_cast<double>(s.num_accepted_draft_tokens) / static_cast<double>(s.num_draft_tokens) : 0.0;
}

void expect_same_tokens(const DraftRun& plain, const DraftRun& spec) {
  ASSERT_EQ(plain.done.size(), spec.done.size());
  for (const auto& [id, f] : plain.done) {
    ASSERT_EQ(spec.done.count(id), 1u);
    EXPECT_EQ(spec.done.at(id).tokens, f.tokens) << "request " << id;
    EXPECT_EQ(spec.done.at(id).finish_count, 1) << "request " << id;
  }
}

// Token trees from a draft: `width` candidates per position within a budget of `k` nodes.
spec::SpeculativeOptions tree_options(spec::SpeculativeMethod method, int k, int width, int layers = 0) {
  spec::SpeculativeOptions o = draft_options(method, k, layers);
  o.tree_width = width;
  return o;
}

// The tiny-qwen3 preset (random weights, vocabulary 512 as stories260K's), generated once per build
// tree by ../shared/tools/make_bench_model.py; null when the generator cannot run.
const Model* tiny_qwen3() {
  static const std::optional<Model> model = []() -> std::optional<Model> {
    std::string why;
    const auto files = ensure_preset("tiny-qwen3", why);
    if (!files) return std::nullopt;
    return Model::open(files->gguf, LoadMode::kCopy);
  }();
  return model ? &*model : nullptr;
}

#define REQUIRE_TINY_QWEN3()                                                                      \
  do {                                                                                           \
    if (tiny_qwen3() == nullptr) {                                                               \
      if (running_in_ci()) FAIL() << "tiny-qwen3 unavailable (no /usr/bin/python3 with numpy)";  \
      GTEST_SKIP() << "tiny-qwen3 unavailable (no /usr/bin/python3 with numpy)";                 \
    }                                                                                            \
  } while (0)

std::shared_ptr<const Model> unowned(const Model& model) { return {std::shared_ptr<const Model>{}, &model}; }

// Tokens a verification step gains on average: 1 + the drafts it confirmed.
double tokens_per_verification(const SchedulerStats& s) {
  uint64_t steps = 0, accepted = 0;
  for (size_t a = 0; a < s.num_verifications_by_accepted.size(); ++a) {
    steps += s.num_verifications_by_accepted[a];
    accepted += a * s.num_verifications_by_accepted[a];
  }
  return steps ? 1.0 + static_cast<double>(accepted) / static_cast<double>(steps) : 0.0;
}

TEST_F(EngineDraftModelTest, GreedyDraftModelGivesThePlainTokens) {
  for (const auto& [label, config] : {std::pair{"batched", engine_config(64)}, std::pair{"chunked", engine_config(64, 24)},
                                      std::pair{"preemption", engine_config(14, 64)}}) {
    SCOPED_TRACE(label);
    const DraftRun plain = run(config, 0.0f);
    EngineConfig c = config;
    c.speculative = draft_options(spec::SpeculativeMethod::kDraftModel, 4);
    const DraftRun spec = run(c, 0.0f);
    expect_same_tokens(plain, spec);
    EXPECT_GT(spec.stats.num_draft_tokens, 0u);
    // The target drafting for itself: every greedy draft is the target's own argmax.
    EXPECT_GT(acceptance(spec.stats), 0.95) << label;
    EXPECT_LT(spec.stats.num_steps, plain.stats.num_steps);
    std::printf("[figure] draft = target, greedy, %s: %.0f%% of %llu drafts accepted, %llu steps vs %llu plain\n", label,
                100.0 * acceptance(spec.stats), static_cast<unsigned long long>(spec.stats.num_draft_tokens),
                static_cast<unsigned long long>(spec.stats.num_steps), static_cast<unsigned long long>(plain.stats.num_steps));
  }
}

TEST_F(EngineDraftModelTest, GreedyLayerSkipGivesThePlainTokens) {
  const DraftRun plain = run(engine_config(64), 0.0f);
  for (int layers : {1, 2, 4}) {
    EngineConfig c = engine_config(64);
    c.speculative = draft_options(spec::SpeculativeMethod::kLayerSkip, 3, layers);
    const DraftRun spec = run(c, 0.0f);
    expect_same_tokens(plain, spec);
    EXPECT_GT(spec.stats.num_draft_tokens, 0u);
    std::printf("[figure] layer-skip %d of 5 layers, greedy: %.0f%% of %llu drafts accepted, %llu steps vs %llu plain\n",
                layers, 100.0 * acceptance(spec.stats), static_cast<unsigned long long>(spec.stats.num_draft_tokens),
                static_cast<unsigned long long>(spec.stats.num_steps), static_cast<unsigned long long>(plain.stats.num_steps));
  }
}

TEST_F(EngineDraftModelTest, SeededStochasticDraftsAreReproducible) {
  for (const auto method : {spec::SpeculativeMethod::kDraftModel, spec::SpeculativeMethod::kLayerSkip}) {
    EngineConfig c = engine_config(14, 64);  // with preemption: recomputed requests draw the same
    c.speculative = draft_options(method, 4, 3);
    const DraftRun a = run(c, 0.8f), b = run(c, 0.8f);
    expect_same_tokens(a, b);
    EXPECT_GT(a.stats.num_accepted_draft_tokens, 0u);
    if (method == spec::SpeculativeMethod::kDraftModel) {
      EXPECT_GT(acceptance(a.stats), 0.9);  // q is p
    }
  }
}

// Parallel choices (n = 3, seeded) with logprobs: speculation (prompt lookup, trees, the model as its
// own greedy draft, greedy trees of its first layers' candidates) changes neither a choice's tokens
// nor its reported logprobs.
TEST_F(EngineDraftModelTest, ChoicesAndLogprobsAreUnchangedBySpeculation) {
  struct Seen {
    std::vector<int32_t> tokens;
    std::vector<float> logprobs;
    std::vector<int32_t> top_ids;
  };
  const auto run_choices = [&](spec::SpeculativeOptions speculative, float temperature) {
    EngineConfig c = engine_config(64);
    c.keep_logits = false;
    c.speculative = std::move(speculative);
    Engine engine(stories_model(), c);
    RequestOptions o = greedy(40);
    o.sampling.temperature = temperature;
    o.sampling.seed = 5;
    o.sampling.logprobs = true;
    o.sampling.top_logprobs = 2;
    engine.add_request(10, kStory, o, 3);
    std::map<RequestId, Seen> seen;
    for (int i = 0; i < 1000 && engine.has_unfinished_requests(); ++i) {
      for (const auto& out : engine.step().outputs) {
        Seen& s = seen[out.output.id];
        EXPECT_EQ(out.output.logprobs.size(), out.output.new_token_ids.size());
        s.tokens.insert(s.tokens.end(), out.output.new_token_ids.begin(), out.output.new_token_ids.end());
        for (const auto& lp : out.output.logprobs) {
          s.logprobs.push_back(lp.logprob);
          for (const auto& t : lp.top) s.top_ids.push_back(t.token);
        }
      }
    }
    EXPECT_EQ(engine.scheduler().stats().kv_blocks_used, 0);
    return std::pair{seen, engine.scheduler().stats().num_accepted_draft_tokens};
  };
  for (const float temperature : {0.0f, 0.8f}) {
    SCOPED_TRACE(temperature);
    const auto [plain, none] = run_choices({}, temperature);
    ASSERT_EQ(plain.size(), 3u);
    std::vector<spec::SpeculativeOptions> methods = {{spec::SpeculativeMethod::kNgram, 4, {1, 3}},
                                                     {spec::SpeculativeMethod::kNgramTree, 4, {1, 3}}};
    if (temperature == 0.0f) {
      methods.push_back(draft_options(spec::SpeculativeMethod::kDraftModel, 3));
      methods.push_back(tree_options(spec::SpeculativeMethod::kLayerSkip, 6, 3, 3));  // greedy trees
    }
    for (const auto& m : methods) {
      SCOPED_TRACE(std::string(spec::speculative_method_name(m.method)));
      const auto [spec, accepted] = run_choices(m, temperature);
      EXPECT_GT(accepted, 0u);
      for (const auto& [id, s] : plain) {
        ASSERT_EQ(spec.count(id), 1u);
        EXPECT_EQ(spec.at(id).tokens, s.tokens) << "choice " << id;
        EXPECT_EQ(spec.at(id).logprobs, s.logprobs) << "choice " << id;
        EXPECT_EQ(spec.at(id).top_ids, s.top_ids) << "choice " << id;
      }
    }
  }
}

TEST_F(EngineDraftModelTest, DraftsOfUnequalVocabularyAreRefused) {
  EngineConfig c = engine_config(64);
  c.speculative = draft_options(spec::SpeculativeMethod::kDraftModel, 4);
  ModelConfig small = small_config();
  auto other = std::make_shared<const Model>(make_random_model(small, 1).build());
  c.speculative.draft_model = other;
  EXPECT_THROW(Engine(stories_model(), c), lemma::InvalidArgument);
  c.speculative = draft_options(spec::SpeculativeMethod::kLayerSkip, 4, 5);  // all 5 layers: nothing skipped
  EXPECT_THROW(Engine(stories_model(), c), lemma::InvalidArgument);
}

// Greedy token trees of the draft's best candidates: the same tokens as plain decoding, batched,
// with chunked prefill and under preemption; drafts from the target itself, its first layers (which
// often disagree with it, so candidates other than the first are confirmed) and another model.
TEST_F(EngineDraftModelTest, GreedyDraftTreesGiveThePlainTokens) {
  REQUIRE_TINY_QWEN3();
  std::vector<std::pair<std::string, spec::SpeculativeOptions>> drafts = {
      {"self, width 3", tree_options(spec::SpeculativeMethod::kDraftModel, 6, 3)},
      {"layer-skip 2, width 3", tree_options(spec::SpeculativeMethod::kLayerSkip, 6, 3, 2)},
      {"layer-skip 4, width 2", tree_options(spec::SpeculativeMethod::kLayerSkip, 5, 2, 4)},
      {"tiny-qwen3, width 4", tree_options(spec::SpeculativeMethod::kDraftModel, 8, 4)}};
  drafts.back().second.draft_model = unowned(*tiny_qwen3());
  for (const auto& [label, config] : {std::pair{"batched", engine_config(64)}, std::pair{"chunked", engine_config(64, 24)},
                                      std::pair{"preemption", engine_config(14, 64)}}) {
    const DraftRun plain = run(config, 0.0f);
    for (const auto& [name, options] : drafts) {
      SCOPED_TRACE(std::string(label) + ", " + name);
      EngineConfig c = config;
      c.speculative = options;
      const DraftRun spec = run(c, 0.0f);
      expect_same_tokens(plain, spec);
      EXPECT_GT(spec.stats.num_draft_tokens, 0u);
      std::printf("[figure] greedy draft trees, %s, %s: %llu of %llu nodes accepted, %.2f tokens per verification, "
                  "%llu steps vs %llu plain\n", label, name.c_str(),
                  static_cast<unsigned long long>(spec.stats.num_accepted_draft_tokens),
                  static_cast<unsigned long long>(spec.stats.num_draft_tokens), tokens_per_verification(spec.stats),
                  static_cast<unsigned long long>(spec.stats.num_steps), static_cast<unsigned long long>(plain.stats.num_steps));
    }
  }
}

// The same on the tiny-qwen3 preset as the target: drafting for itself, with stories260K as the
// draft, and with its first layer.
TEST_F(EngineDraftModelTest, GreedyDraftTreesGiveThePlainTokensOnTinyQwen3) {
  REQUIRE_TINY_QWEN3();
  const Model& target = *tiny_qwen3();
  std::vector<spec::SpeculativeOptions> drafts = {tree_options(spec::SpeculativeMethod::kDraftModel, 6, 3),
                                                  tree_options(spec::SpeculativeMethod::kDraftModel, 6, 3),
                                                  tree_options(spec::SpeculativeMethod::kLayerSkip, 4, 4, 1)};
  drafts[0].draft_model = unowned(target);
  drafts[1].draft_model = stories_as_draft();
  for (const EngineConfig& config : {engine_config(64), engine_config(14, 64)}) {
    const DraftRun plain = run(target, config, 0.0f);
    for (size_t d = 0; d < drafts.size(); ++d) {
      SCOPED_TRACE(d);
      EngineConfig c = config;
      c.speculative = drafts[d];
      const DraftRun spec = run(target, c, 0.0f);
      expect_same_tokens(plain, spec);
      EXPECT_GT(spec.stats.num_draft_tokens, 0u);
    }
  }
}

TEST_F(EngineDraftModelTest, SeededStochasticDraftTreesAreReproducible) {
  REQUIRE_TINY_QWEN3();
  std::vector<spec::SpeculativeOptions> drafts = {tree_options(spec::SpeculativeMethod::kDraftModel, 6, 3),
                                                  tree_options(spec::SpeculativeMethod::kLayerSkip, 6, 2, 3),
                                                  tree_options(spec::SpeculativeMethod::kDraftModel, 6, 3)};
  drafts[2].draft_model = unowned(*tiny_qwen3());
  for (const auto& options : drafts) {
    EngineConfig c = engine_config(14, 64);  // with preemption: recomputed requests draw the same
    c.speculative = options;
    const DraftRun a = run(c, 0.8f), b = run(c, 0.8f);
    expect_same_tokens(a, b);
    EXPECT_GT(a.stats.num_draft_tokens, 0u);
  }
}

// Acceptance at an equal node budget (6 nodes), temperature 1: a chain against trees of width 2 and
// 3. With the model as its own draft p == q, so the first candidate of every position is kept and
// no verification confirms nothing; the figures say what a tree buys where the draft disagrees.
TEST_F(EngineDraftModelTest, ChainAndTreeAcceptanceAtEqualBudget) {
  REQUIRE_TINY_QWEN3();
  const std::vector<std::pair<std::string, spec::SpeculativeOptions>> drafts = {
      {"self", draft_options(spec::SpeculativeMethod::kDraftModel, 6)},
      {"layer-skip 4 of 5", draft_options(spec::SpeculativeMethod::kLayerSkip, 6, 4)},
      {"layer-skip 3 of 5", draft_options(spec::SpeculativeMethod::kLayerSkip, 6, 3)},
      {"tiny-qwen3", draft_options(spec::SpeculativeMethod::kDraftModel, 6)}};
  for (const auto& [name, base] : drafts) {
    for (const int width : {1, 2, 3}) {
      EngineConfig c = engine_config(64);
      c.speculative = base;
      c.speculative.tree_width = width;
      if (name == "tiny-qwen3") c.speculative.draft_model = unowned(*tiny_qwen3());
      const DraftRun r = run(c, 1.0f, 16);
      EXPECT_GT(r.stats.num_draft_tokens, 0u);
      if (name == "self") {
        EXPECT_EQ(r.stats.num_verifications_by_accepted[0], 0u) << "width " << width;
      }
      std::printf("[figure] T=1, 6 nodes, draft %s, width %d: %.2f tokens per verification, %.0f%% of nodes accepted, "
                  "%llu steps\n", name.c_str(), width, tokens_per_verification(r.stats), 100.0 * acceptance(r.stats),
                  static_cast<unsigned long long>(r.stats.num_steps));
    }
  }
}

// The output law with stochastic drafts from a different model equals the target's: four tokens
// after a fixed prompt, over a 4-token vocabulary (256 cells), against the exact joint law; drafts
// as a chain of `num_tokens` or as trees of `tree_width` candidates per position.
void expect_the_targets_law(int num_tokens, int tree_width) {
  ModelConfig config = small_config();
  config.vocab_size = 4;
  const RandomModel target_weights = make_random_model(config, 11);
  const RandomModel draft_weights = make_random_model(config, 12);
  const Model target = target_weights.build();
  const std::vector<int32_t> prompt = {1, 2, 3, 0};
  constexpr size_t kVocab = 4;
  // Exact p(x | tokens), softmax of the float64 reference forward at temperature 1.
  const auto probs_after = [&](std::vector<int32_t> tokens) {
    const std::vector<double> logits = reference_forward(target_weights, tokens);
    const double* last = logits.data() + (tokens.size() - 1) * kVocab;
    std::vector<double> p(kVocab);
    double max = last[0], total = 0.0;
    for (size_t i = 1; i < kVocab; ++i) max = std::max(max, last[i]);
    for (size_t i = 0; i < kVocab; ++i) total += (p[i] = std::exp(last[i] - max));
    for (double& v : p) v /= total;
    return p;
  };
  // The first kCounted outputs: the first sampled after the prompt, the next ones from the step that
  // verifies the drafts (a chain or a tree of up to 4 nodes under it) and its bonus token.
  constexpr size_t kCounted = 4;
  std::vector<double> expected(kVocab * kVocab * kVocab * kVocab);
  for (size_t cell = 0; cell < expected.size(); ++cell) {
    std::vector<int32_t> tokens = prompt;
    double law = 1.0;
    for (size_t k = 0, rest = cell; k < kCounted; ++k) {
      const size_t place = kVocab * kVocab * kVocab;  // the first token is the cell's most significant digit
      const auto token = static_cast<int32_t>(rest / place);
      rest = (rest % place) * kVocab;
      law *= probs_after(tokens)[static_cast<size_t>(token)];
      tokens.push_back(token);
    }
    expected[cell] = law;
  }
  EngineConfig c;
  c.scheduler.max_num_batched_tokens = 512;
  c.scheduler.max_num_seqs = 64;
  c.scheduler.max_model_len = 16;
  c.kv.num_device_blocks = 64;
  c.kv.block_size = 16;
  c.kv.watermark = 0.0;
  c.kv.enable_prefix_caching = false;
  c.speculative.method = spec::SpeculativeMethod::kDraftModel;
  c.speculative.num_tokens = num_tokens;
  c.speculative.tree_width = tree_width;
  c.speculative.draft_model = std::make_shared<const Model>(draft_weights.build());
  Engine engine(target, c);
  constexpr int64_t kSamples = 20000;
  std::vector<int64_t> counts(expected.size(), 0);
  RequestId next = 1;
  int64_t done = 0;
  std::map<RequestId, std::vector<int32_t>> tokens;
  while (done < kSamples) {
    while (next <= static_cast<RequestId>(kSamples) && engine.scheduler().num_running() + engine.scheduler().num_waiting() < 64) {
      RequestOptions o;
      o.sampling.temperature = 1.0f;
      o.sampling.seed = next * 7919;
      o.stop.max_tokens = kCounted + 2;  // room for 4 drafts after the first token
      o.stop.ignore_eos = true;
      engine.add_request(next++, prompt, o);
    }
    for (const auto& out : engine.step().outputs) {
      auto& t = tokens[out.output.id];
      t.insert(t.end(), out.output.new_token_ids.begin(), out.output.new_token_ids.end());
      if (!out.output.finished()) continue;
      ASSERT_EQ(t.size(), kCounted + 2);
      size_t cell = 0;
      for (size_t k = 0; k < kCounted; ++k) cell = cell * kVocab + static_cast<size_t>(t[k]);
      ++counts[cell];
      tokens.erase(out.output.id);
      ++done;
    }
  }
  const SchedulerStats stats = engine.scheduler().stats();
  EXPECT_GT(stats.num_accepted_draft_tokens, 0u);
  EXPECT_LT(stats.num_accepted_draft_tokens, stats.num_draft_tokens);  // rejections and residual draws ran
  double chi = 0.0;
  int dof = -1;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = expected[i] * static_cast<double>(kSamples);
    chi += (static_cast<double>(counts[i]) - e) * (static_cast<double>(counts[i]) - e) / e;
    ++dof;
  }
  // Upper 0.1% point of chi-square(dof) (Wilson-Hilferty): 255 dof -> ~331.
  const double t = 1.0 - 2.0 / (9.0 * dof) + 3.0902 * std::sqrt(2.0 / (9.0 * dof));
  EXPECT_LT(chi, dof * t * t * t);
  std::printf("[figure] draft model (other random weights), %d nodes, width %d: chi-square %.1f on %d dof; %.0f%% of "
              "drafts accepted, %.2f tokens per verification\n", num_tokens, tree_width, chi, dof, 100.0 * acceptance(stats),
              tokens_per_verification(stats));
}

TEST(EngineSpeculativeDistribution, DraftModelOutputsFollowTheTargetsLaw) { expect_the_targets_law(3, 1); }

// Trees of 4 nodes: two candidates at each of two positions, and three then one.
TEST(EngineSpeculativeDistribution, DraftTreeOutputsFollowTheTargetsLaw) {
  expect_the_targets_law(4, 2);
  expect_the_targets_law(4, 3);
}

}  // namespace
}  // namespace lemma::testing
