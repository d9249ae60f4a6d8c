// BeamSearch's rule on hand-made rows: ranking and its ties, EOS among and beyond the first W
// ranks, the kept W hypotheses, the three early-stopping rules and the length limit.
#include <gtest/gtest.h>

#include <cmath>

#include "lemma/engine/beam_search.h"

namespace lemma {
namespace {

constexpr int32_t kEos = 9;

// EOS ends a hypothesis; nothing else does before `max_length` tokens.
BeamSearch::EndCheck ends_at(int64_t max_length) {
  return [max_length](std::span<const int32_t> tokens) -> std::optional<RequestStatus> {
    if (tokens.back() == kEos) return RequestStatus::kFinishedStopped;
    if (static_cast<int64_t>(tokens.size()) >= max_length) return RequestStatus::kFinishedLength;
    return std::nullopt;
  };
}

BeamSearchParams params(int32_t width, float length_penalty = 1.0f, EarlyStopping e = EarlyStopping::kHeuristic) {
  return BeamSearchParams{width, length_penalty, e};
}

TEST(BeamSearch, ScoreDividesByLengthToThePenalty) {
  EXPECT_DOUBLE_EQ(beam_score(-6.0, 3, 1.0f), -2.0);
  EXPECT_DOUBLE_EQ(beam_score(-6.0, 4, 0.5f), -3.0);
  EXPECT_DOUBLE_EQ(beam_score(-6.0, 4, 0.0f), -6.0);
  EXPECT_DOUBLE_EQ(beam_score(-6.0, 2, -1.0f), -12.0);
}

TEST(BeamSearch, KeepsTheBestContinuationsOverAllBeamsWithDeterministicTies) {
  BeamSearch s(params(2), 10);
  auto next = s.step(std::vector<std::vector<TokenLogprob>>{{{4, -0.5f}, {7, -1.0f}, {1, -3.0f}, {2, -4.0f}}}, ends_at(10));
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].token, 4);
  EXPECT_EQ(next[1].token, 7);
  // Beam 0 (cum -0.5) and beam 1 (cum -1.0): -0.5-1.5 = -1.0-1.0 = -2.0 tie -> lower beam index first.
  next = s.step(std::vector<std::vector<TokenLogprob>>{{{5, -1.5f}, {6, -2.5f}}, {{3, -1.0f}, {8, -2.0f}}}, ends_at(10));
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].parent, 0);
  EXPECT_EQ(next[0].token, 5);
  EXPECT_EQ(next[1].parent, 1);
  EXPECT_EQ(next[1].token, 3);
  EXPECT_EQ(std::vector<int32_t>(s.tokens(0).begin(), s.tokens(0).end()), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(std::vector<int32_t>(s.tokens(1).begin(), s.tokens(1).end()), (std::vector<int32_t>{7, 3}));
}

TEST(BeamSearch, EosFinishesOnlyAmongTheFirstWRanks) {
  BeamSearch s(params(2), 10);
  // EOS ranked 0: a hypothesis; the live beams are the next two.
  auto next = s.step(std::vector<std::vector<TokenLogprob>>{{{kEos, -0.1f}, {4, -1.0f}, {5, -2.0f}, {6, -3.0f}}}, ends_at(10));
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].token, 4);
  EXPECT_EQ(next[1].token, 5);
  ASSERT_EQ(s.finished().size(), 1u);
  EXPECT_EQ(s.finished()[0].tokens, (std::vector<int32_t>{kEos}));
  EXPECT_EQ(s.finished()[0].status, RequestStatus::kFinishedStopped);
  // Beams at -1 and -2. Ranked: [4, 1] -1.1 live, [4, EOS] -1.2 kept (rank 1), [5, EOS] -2.1
  // dropped (rank 2 >= W), [5, 3] -2.5 live.
  next = s.step(std::vector<std::vector<TokenLogprob>>{{{1, -0.1f}, {kEos, -0.2f}}, {{kEos, -0.1f}, {3, -0.5f}}},
                ends_at(10));
  ASSERT_EQ(s.finished().size(), 2u);
  EXPECT_EQ(s.finished()[1].tokens, (std::vector<int32_t>{4, kEos}));
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].parent, 0);
  EXPECT_EQ(next[0].token, 1);
  EXPECT_EQ(next[1].parent, 1);
  EXPECT_EQ(next[1].token, 3);
}

TEST(BeamSearch, EarlyStoppingRules) {
  const std::vector<std::vector<TokenLogprob>> first = {{{kEos, -1.0f}, {4, -1.2f}, {kEos + 1, -1.3f}, {5, -1.4f}}};
  // W = 1: EOS (score -1) is kept; the live beam (cum -1.2) ...
  {
    BeamSearch s(params(1, 1.0f, EarlyStopping::kWhenFull), 10);
    EXPECT_TRUE(s.step(first, ends_at(10)).empty());  // ... is dropped: one hypothesis is enough
    EXPECT_TRUE(s.is_over());
  }
  {
    BeamSearch s(params(1, 1.0f, EarlyStopping::kHeuristic), 10);
    EXPECT_TRUE(s.step(first, ends_at(10)).empty());  // ... scored now (-1.2) cannot beat -1
  }
  {
    // With length_penalty 1 a longer beam could still reach -1.2 / 10 > -1: "never" goes on.
    BeamSearch s(params(1, 1.0f, EarlyStopping::kNever), 10);
    EXPECT_EQ(s.step(first, ends_at(10)).size(), 1u);
    // ... until even the longest continuation cannot win: -9 / 10 < -1 is still a win, -11 / 10 is not.
    EXPECT_EQ(s.step(std::vector<std::vector<TokenLogprob>>{{{6, -7.8f}, {7, -9.0f}}}, ends_at(10)).size(), 1u);
    EXPECT_TRUE(s.step(std::vector<std::vector<TokenLogprob>>{{{6, -2.0f}, {7, -9.0f}}}, ends_at(10)).empty());
    ASSERT_EQ(s.finished().size(), 1u);
    EXPECT_EQ(s.finished()[0].tokens, (std::vector<int32_t>{kEos}));
  }
}

TEST(BeamSearch, LiveBeamsAtTheLengthLimitBecomeHypothesesKeepingTheBestW) {
  BeamSearch s(params(2, 0.0f), 2);
  s.step(std::vector<std::vector<TokenLogprob>>{{{kEos, -0.5f}, {4, -0.6f}, {5, -0.7f}, {6, -3.0f}}}, ends_at(2));
  EXPECT_FALSE(s.is_over());
  EXPECT_TRUE(s.step(std::vector<std::vector<TokenLogprob>>{{{1, -0.1f}}, {{2, -0.05f}}}, ends_at(2)).empty());
  ASSERT_EQ(s.finished().size(), 2u);  // -0.5 (EOS), -0.7 ([4, 1]); [5, 2] at -0.75 is not kept
  EXPECT_EQ(s.finished()[0].tokens, (std::vector<int32_t>{kEos}));
  EXPECT_EQ(s.finished()[1].tokens, (std::vector<int32_t>{4, 1}));
  EXPECT_EQ(s.finished()[1].status, RequestStatus::kFinishedLength);
  EXPECT_NEAR(s.finished()[1].cum_logprob, -0.7, 1e-6);
  EXPECT_EQ(s.finished()[1].token_logprobs, (std::vector<float>{-0.6f, -0.1f}));
}

}  // namespace
}  // namespace lemma
