// run_model_bench on an in-memory random model: the phases, token counts and repetitions it
// reports, and the output check that refuses to time a broken model. Timings are not asserted.
#include "lemma/bench/model_bench.h"

#include <gtest/gtest.h>

#include <limits>

#include "lemma/base/error.h"
#include "random_model.h"

namespace lemma::bench {
namespace {

TEST(ModelBench, ReportsPrefillAndDecodePhases) {
  const Model model = testing::make_random_model(testing::small_config(), 1).build();
  std::vector<std::string> notes;
  const auto results = run_model_bench(model, {8, 5, 2, 2, 3, 42}, [&](const std::string& s) { notes.push_back(s); });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].test, "pp8");
  EXPECT_EQ(results[0].batch, 1);
  EXPECT_EQ(results[0].tokens_per_rep, 8);
  EXPECT_EQ(results[1].test, "tg5");
  EXPECT_EQ(results[1].batch, 3);
  EXPECT_EQ(results[1].tokens_per_rep, 15);
  for (const auto& r : results) {
    EXPECT_EQ(r.seconds.size(), 2u);
    EXPECT_EQ(r.tokens_per_s.count, 2);
    EXPECT_GT(r.tokens_per_s.mean, 0.0);
  }
  const std::vector<std::string> expected = {"pp8 warm-up", "pp8 rep 1/2", "pp8 rep 2/2",
                                             "tg5 warm-up", "tg5 rep 1/2", "tg5 rep 2/2",
                                             "tg5 traced run (framework overhead)"};
  EXPECT_EQ(notes, expected);
  EXPECT_EQ(model_bench_steps({8, 5, 2, 2, 3, 42}), static_cast<int64_t>(notes.size()));  // the progress total
  EXPECT_EQ(model_bench_steps({8, 0, 2, 2, 3, 42}), 3);
  // The decode phase's overhead figure comes from the traced run: 5 steps, each with kernel ranges.
  EXPECT_GT(results[1].overhead.step_ms, 0.0);
  EXPECT_GE(results[1].overhead.overhead_fraction(), 0.0);
  EXPECT_LT(results[1].overhead.overhead_fraction(), 1.0);
}

// MoE (G27): the decode phase reports the experts its steps ran, summed over the MoE layers: top-2
// of each layer for one sequence, between 2 and all 4 per layer for a batch of 3.
TEST(ModelBench, MoeDecodeCountsTheExpertsItsStepsRan) {
  const Model model = testing::make_random_moe_model(4).build();
  const int64_t layers = model.config().num_layers;
  const auto one = run_model_bench(model, {0, 6, 1, 1, 1, 42});
  EXPECT_DOUBLE_EQ(one[0].moe_active_experts, static_cast<double>(2 * layers));
  const auto three = run_model_bench(model, {0, 6, 1, 1, 3, 42});
  EXPECT_GE(three[0].moe_active_experts, static_cast<double>(2 * layers));
  EXPECT_LE(three[0].moe_active_experts, static_cast<double>(4 * layers));
  const auto dense = run_model_bench(testing::make_random_model(testing::small_config(), 1).build(), {0, 3, 1, 1, 1, 42});
  EXPECT_EQ(dense[0].moe_active_experts, 0.0);
}

TEST(ModelBench, SkipsPhasesSetToZero) {
  const Model model = testing::make_random_model(testing::small_config(), 1).build();
  const auto results = run_model_bench(model, {0, 3, 1, 1, 1, 42});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].test, "tg3");
  EXPECT_THROW(run_model_bench(model, {8, 3, 0, 1, 1, 42}), InvalidArgument);
  EXPECT_THROW(run_model_bench(model, {8, 3, 1, 1, 0, 42}), InvalidArgument);
}

TEST(ModelBench, TestsAtADepthRunAfterThatManyCachedTokens) {
  const Model model = testing::make_random_model(testing::small_config(), 1).build();  // 64 positions
  std::vector<std::string> notes;
  ModelBenchOptions options{4, 3, 1, 1, 2, 42};
  options.depth = 40;
  const auto results = run_model_bench(model, options, [&](const std::string& s) { notes.push_back(s); });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].test, "pp4@d40");
  EXPECT_EQ(results[1].test, "tg3@d40");
  EXPECT_EQ(results[1].tokens_per_rep, 6);
  ASSERT_GE(notes.size(), 3u);
  EXPECT_EQ(notes[0], "filling depth 40 of sequence 1/2");
  EXPECT_EQ(notes[1], "filling depth 40 of sequence 2/2");
  EXPECT_EQ(notes[2], "pp4@d40 warm-up");
  EXPECT_EQ(model_bench_steps(options), static_cast<int64_t>(notes.size()));
  // depth + the longer test must fit the model's positions: 60 + 4 does, 61 + 4 does not.
  options.depth = 60;
  EXPECT_NO_THROW(run_model_bench(model, options));
  options.depth = 61;
  EXPECT_THROW(run_model_bench(model, options), InvalidArgument);
  options.depth = -1;
  EXPECT_THROW(run_model_bench(model, options), InvalidArgument);
}

// A verification step: each sequence feeds 1 + drafts tokens with logits for all of them.
TEST(ModelBench, StepTokensFeedSeveralTokensPerSequence) {
  const Model model = testing::make_random_model(testing::small_config(), 1).build();  // 64 positions
  ModelBenchOptions options{0, 3, 1, 1, 2, 42};
  options.step_tokens = 5;
  const auto results = run_model_bench(model, options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].test, "tg3x5");
  EXPECT_EQ(results[0].tokens_per_rep, 3 * 2 * 5);
  options.gen_tokens = 13;  // 65 positions: beyond the model's 64
  EXPECT_THROW(run_model_bench(model, options), InvalidArgument);
  options.gen_tokens = 3;
  options.step_tokens = 0;
  EXPECT_THROW(run_model_bench(model, options), InvalidArgument);
}

// The bandwidth probe runs before the first timed decode rep and after each, never inside a rep.
TEST(ModelBench, ReadsBandwidthAroundEachDecodeRep) {
  const Model model = testing::make_random_model(testing::small_config(), 1).build();
  std::vector<std::string> events;
  ModelBenchOptions options{4, 3, 3, 1, 1, 42};
  double next_reading = 10.0;
  options.read_bandwidth = [&] {
    events.push_back("read");
    return next_reading++;
  };
  const auto results = run_model_bench(model, options, [&](const std::string& s) { events.push_back(s); });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].bandwidth_gbps.empty());  // prefill is compute-bound: no readings
  EXPECT_EQ(results[1].bandwidth_gbps, (std::vector<double>{10.0, 11.0, 12.0, 13.0}));
  const std::vector<std::string> expected = {"pp4 warm-up", "pp4 rep 1/3", "pp4 rep 2/3", "pp4 rep 3/3",
                                             "tg3 warm-up", "read", "tg3 rep 1/3", "read", "tg3 rep 2/3", "read",
                                             "tg3 rep 3/3", "read", "tg3 traced run (framework overhead)"};
  EXPECT_EQ(events, expected);
}

TEST(ModelBench, RefusesToTimeNonFiniteOutputs) {
  auto random = testing::make_random_model(testing::small_config(), 2);
  for (auto& v : random.tensors->at("model.norm.weight")) v = std::numeric_limits<float>::quiet_NaN();
  const Model model = random.build();
  std::vector<std::string> notes;
  EXPECT_THROW(run_model_bench(model, {8, 3, 2, 1, 1, 42}, [&](const std::string& s) { notes.push_back(s); }), Error);
  EXPECT_EQ(notes, std::vector<std::string>{"pp8 warm-up"});  // nothing was timed
}

}  // namespace
}  // namespace lemma::bench
