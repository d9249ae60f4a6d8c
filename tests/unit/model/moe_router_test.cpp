// The MoE routing rules (G27, moe/moe_router.h) against values worked out by hand from their
// definitions: softmax / sigmoid scores, top-k with ties to the lower index, renormalisation,
// routed_scaling_factor, DeepSeek's group-limited top-k (V2's group max vs V3's top-2 sum) and V3's
// e_score_correction_bias, which chooses experts but never weighs them.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lemma/model/moe/moe_router.h"

namespace lemma::moe {
namespace {

struct Routed {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};

Routed route(const std::vector<float>& logits, const RoutingRule& rule, const std::vector<float>& bias = {}) {
  std::vector<float> scratch(static_cast<size_t>(route_scratch_floats(static_cast<int64_t>(logits.size()))));
  Routed r{std::vector<int32_t>(static_cast<size_t>(rule.top_k)), std::vector<float>(static_cast<size_t>(rule.top_k))};
  route_token(logits, bias, rule, scratch, r.experts, r.weights);
  return r;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Mixtral: softmax over [1, 2, 0, 3], top-2 = experts 3 and 1, renormalised:
// e^3 / (e^3 + e^2) = sigmoid(1), e^2 / (e^3 + e^2) = sigmoid(-1).
TEST(MoeRouter, SoftmaxTopKRenormalised) {
  const Routed r = route({1, 2, 0, 3}, {.scoring = RouterScoring::kSoftmax, .top_k = 2, .normalize_top_k = true});
  EXPECT_EQ(r.experts, (std::vector<int32_t>{3, 1}));
  EXPECT_NEAR(r.weights[0], sigmoid(1.0), 1e-6);
  EXPECT_NEAR(r.weights[1], sigmoid(-1.0), 1e-6);
}

// Qwen2-MoE (norm_topk_prob false): the two softmax probabilities themselves, e^3 / S and e^2 / S
// with S = e + e^2 + 1 + e^3.
TEST(MoeRouter, SoftmaxTopKNotRenormalised) {
  const Routed r = route({1, 2, 0, 3}, {.scoring = RouterScoring::kSoftmax, .top_k = 2});
  const double S = std::exp(1.0) + std::exp(2.0) + 1.0 + std::exp(3.0);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{3, 1}));
  EXPECT_NEAR(r.weights[0], std::exp(3.0) / S, 1e-6);
  EXPECT_NEAR(r.weights[1], std::exp(2.0) / S, 1e-6);
}

TEST(MoeRouter, TiesGoToTheLowerExpertIndex) {
  const Routed r = route({0.5f, 0.5f, 0.5f, 0.5f}, {.scoring = RouterScoring::kSoftmax, .top_k = 3});
  EXPECT_EQ(r.experts, (std::vector<int32_t>{0, 1, 2}));
  for (float w : r.weights) EXPECT_FLOAT_EQ(w, 0.25f);
}

TEST(MoeRouter, SigmoidScoresWithScaling) {
  const Routed r = route({-1, 2, 0.5f}, {.scoring = RouterScoring::kSigmoid, .top_k = 2, .routed_scaling_factor = 2.0f});
  EXPECT_EQ(r.experts, (std::vector<int32_t>{1, 2}));
  EXPECT_NEAR(r.weights[0], 2.0 * sigmoid(2.0), 1e-6);
  EXPECT_NEAR(r.weights[1], 2.0 * sigmoid(0.5), 1e-6);
}

// 8 experts in 2 groups of 4: group 0 holds the single best expert (logit 3), group 1 the next two
// (2.5, 2.4). Plain top-2 takes experts 0 and 4.
const std::vector<float> kGroupedLogits = {3, 0, 0, 0, 2.5f, 2.4f, 0, 0};

TEST(MoeRouter, PlainTopKIgnoresGroups) {
  const Routed r = route(kGroupedLogits, {.scoring = RouterScoring::kSoftmax, .top_k = 2});
  EXPECT_EQ(r.experts, (std::vector<int32_t>{0, 4}));
}

// DeepSeek-V2 group_limited_greedy (topk_group 1): group scores are the groups' best probabilities,
// e^3 > e^2.5, so only group 0 is eligible: experts 0 and 1 (the lowest index among the e^0 ties).
// Not renormalised, times routed_scaling_factor 1.5: 1.5 e^3 / S and 1.5 / S.
TEST(MoeRouter, DeepSeekV2GroupMax) {
  const RoutingRule rule{.scoring = RouterScoring::kSoftmax, .top_k = 2, .routed_scaling_factor = 1.5f,
                         .group_score = GroupScore::kMax, .num_groups = 2, .top_groups = 1};
  const Routed r = route(kGroupedLogits, rule);
  const double S = std::exp(3.0) + 5.0 + std::exp(2.5) + std::exp(2.4);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{0, 1}));
  EXPECT_NEAR(r.weights[0], 1.5 * std::exp(3.0) / S, 1e-6);
  EXPECT_NEAR(r.weights[1], 1.5 / S, 1e-6);
}

// The same logits under V3's group score, the sum of a group's two best: group 0 scores
// (e^3 + 1) / S = 21.09 / S, group 1 (e^2.5 + e^2.4) / S = 23.21 / S, so group 1 wins: experts 4, 5.
TEST(MoeRouter, DeepSeekV3GroupTop2SumPicksAnotherGroup) {
  const RoutingRule rule{.scoring = RouterScoring::kSoftmax, .top_k = 2, .normalize_top_k = true,
                         .group_score = GroupScore::kTop2Sum, .num_groups = 2, .top_groups = 1};
  const Routed r = route(kGroupedLogits, rule);
  EXPECT_EQ(r.experts, (std::vector<int32_t>{4, 5}));
  EXPECT_NEAR(r.weights[0], sigmoid(0.1), 1e-6);  // e^2.5 / (e^2.5 + e^2.4)
  EXPECT_NEAR(r.weights[1], sigmoid(-0.1), 1e-6);
}

// DeepSeek-V3 noaux_tc: sigmoid scores, choice = score + e_score_correction_bias, 4 groups of 2,
// topk_group 2, top-2, renormalised, times 2.5. Logits [0, 1, 0, -1, 2, -2, 0, 0]; bias
// [0, 0, 0.2, 0.9, 0, 0, 0, 0].
//   sigmoid:  .5  .731  .5  .269  .881  .119  .5  .5
//   choice:   .5  .731  .7  1.169 .881  .119  .5  .5
//   group top-2 sums: g0 1.231, g1 1.869, g2 1.0, g3 1.0 -> groups 1 and 0
//   top-2 choice among experts 0..3: 3 (1.169), 1 (0.731)
//   weights from the unbiased scores: sigmoid(-1), sigmoid(1), renormalised (sum 1) -> x 2.5.
// Without the bias, top-2 would be experts 4 and 1.
TEST(MoeRouter, DeepSeekV3NoauxTcBiasChoosesButDoesNotWeigh) {
  const RoutingRule rule{.scoring = RouterScoring::kSigmoid, .top_k = 2, .normalize_top_k = true,
                         .routed_scaling_factor = 2.5f, .group_score = GroupScore::kTop2Sum, .num_groups = 4,
                         .top_groups = 2};
  const std::vector<float> logits = {0, 1, 0, -1, 2, -2, 0, 0};
  const Routed r = route(logits, rule, {0, 0, 0.2f, 0.9f, 0, 0, 0, 0});
  EXPECT_EQ(r.experts, (std::vector<int32_t>{3, 1}));
  const double sum = sigmoid(-1.0) + sigmoid(1.0);  // = 1
  EXPECT_NEAR(r.weights[0], 2.5 * sigmoid(-1.0) / sum, 1e-6);
  EXPECT_NEAR(r.weights[1], 2.5 * sigmoid(1.0) / sum, 1e-6);

  const RoutingRule plain{.scoring = RouterScoring::kSigmoid, .top_k = 2};
  EXPECT_EQ(route(logits, plain).experts, (std::vector<int32_t>{4, 1}));
}

// Groups scored by V2's max over the same biased choices: g0 .731, g1 1.169, g2 .881, g3 .5 ->
// groups 1 and 2: experts 3 (1.169) and 4 (.881).
TEST(MoeRouter, GroupMaxOverBiasedChoices) {
  const RoutingRule rule{.scoring = RouterScoring::kSigmoid, .top_k = 2, .group_score = GroupScore::kMax,
                         .num_groups = 4, .top_groups = 2};
  const Routed r = route({0, 1, 0, -1, 2, -2, 0, 0}, rule, {0, 0, 0.2f, 0.9f, 0, 0, 0, 0});
  EXPECT_EQ(r.experts, (std::vector<int32_t>{3, 4}));
  EXPECT_NEAR(r.weights[0], sigmoid(-1.0), 1e-6);
  EXPECT_NEAR(r.weights[1], sigmoid(2.0), 1e-6);
}

}  // namespace
}  // namespace lemma::moe
