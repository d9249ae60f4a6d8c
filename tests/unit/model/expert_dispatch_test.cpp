// Dispatch and combine of a MoE layer (G27, moe/expert_dispatch.h) on a hand-worked example:
// 3 tokens, top-2 of 3 experts.
#include <gtest/gtest.h>

#include <vector>

#include "lemma/model/moe/expert_dispatch.h"

namespace lemma::moe {
namespace {

// Token 0 -> experts (2, 0), token 1 -> (0, 1), token 2 -> (2, 1). Grouped by expert, tokens in
// order: expert 0 holds (t0 s1), (t1 s0); expert 1 (t1 s1), (t2 s1); expert 2 (t0 s0), (t2 s0).
const std::vector<int32_t> kExperts = {2, 0, 0, 1, 2, 1};

TEST(ExpertDispatch, GroupsTokenSlotsByExpertInTokenOrder) {
  ExpertDispatch d;
  plan_dispatch(kExperts, 2, 3, d);
  EXPECT_EQ(d.offsets, (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(d.sources, (std::vector<int32_t>{1, 2, 3, 5, 0, 4}));
  EXPECT_EQ(d.position, (std::vector<int32_t>{4, 0, 1, 2, 5, 3}));
  EXPECT_EQ(d.tokens_of(0), 2);
  EXPECT_EQ(d.tokens_of(2), 2);
  // An expert nobody chose has an empty range.
  plan_dispatch(std::vector<int32_t>{1, 1}, 1, 3, d);
  EXPECT_EQ(d.offsets, (std::vector<int64_t>{0, 0, 2, 2}));
}

TEST(ExpertDispatch, DispatchCopiesRowsAndCombineSumsWeightedInSlotOrder) {
  ExpertDispatch d;
  plan_dispatch(kExperts, 2, 3, d);
  const int64_t H = 2;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // token t's row: (2t + 1, 2t + 2)
  std::vector<float> grouped(12);
  ThreadTeam team(2);
  dispatch_rows(d, x, H, grouped, &team);
  EXPECT_EQ(grouped, (std::vector<float>{1, 2, 3, 4, 3, 4, 5, 6, 1, 2, 5, 6}));
  // Expert e "outputs" its input times (e + 1): expert 0 rows 0-1, expert 1 rows 2-3, expert 2 rows 4-5.
  std::vector<float> expert_out(grouped);
  for (size_t r = 0; r < 6; ++r)
    for (size_t i = 0; i < 2; ++i) expert_out[r * 2 + i] *= static_cast<float>(r / 2 + 1);
  const std::vector<float> weights = {0.75f, 0.25f, 0.5f, 0.5f, 1.0f, 2.0f};
  std::vector<float> out(6, -1.0f);
  combine_rows(d, expert_out, weights, H, out, &team);
  // t0: 0.75 * 3 * (1, 2) + 0.25 * 1 * (1, 2) = (2.5, 5)
  // t1: 0.5 * 1 * (3, 4) + 0.5 * 2 * (3, 4) = (4.5, 6)
  // t2: 1 * 3 * (5, 6) + 2 * 2 * (5, 6) = (35, 42)
  EXPECT_EQ(out, (std::vector<float>{2.5f, 5.0f, 4.5f, 6.0f, 35.0f, 42.0f}));
}

}  // namespace
}  // namespace lemma::moe
