#include "lemma/spec/ngram_proposer.h"

#include <gtest/gtest.h>

namespace lemma::spec {
namespace {

std::vector<int32_t> propose(const std::vector<int32_t>& tokens, int k, NgramConfig config = {}) {
  std::vector<int32_t> out{99, 99};  // cleared first
  propose_ngram(tokens, config, k, out);
  return out;
}

TEST(NgramProposer, ContinuesTheMostRecentEarlierOccurrence) {
  //                      0  1  2  3  4  5  6  7  8  9 10
  const std::vector<int32_t> t{5, 6, 7, 8, 9, 5, 6, 7, 1, 5, 6};
  // Suffix [5, 6] last occurred at 5 (followed by 7, 1, 5, 6), before that at 0.
  EXPECT_EQ(propose(t, 3), (std::vector<int32_t>{7, 1, 5}));
  EXPECT_EQ(propose(t, 10), (std::vector<int32_t>{7, 1, 5, 6}));  // only what follows
  EXPECT_TRUE(propose(t, 0).empty());
}

TEST(NgramProposer, PrefersLongerSuffixes) {
  // [3, 4] occurs at 0 (-> 8) and [9, 3, 4] at 3 (-> 7): the longer match wins though older.
  const std::vector<int32_t> t{3, 4, 8, 9, 3, 4, 7, 0, 3, 4, 8, 9, 3, 4};
  EXPECT_EQ(propose(t, 1, {2, 3}), (std::vector<int32_t>{7}));
  EXPECT_EQ(propose(t, 1, {2, 2}), (std::vector<int32_t>{8}));
}

TEST(NgramProposer, NothingWithoutAMatchOrBelowMinN) {
  EXPECT_TRUE(propose({1, 2, 3, 4, 5}, 4).empty());
  EXPECT_TRUE(propose({7}, 4).empty());
  EXPECT_TRUE(propose({}, 4).empty());
  // Only a 1-token suffix repeats: min_n 2 proposes nothing, min_n 1 proposes.
  EXPECT_TRUE(propose({1, 2, 3, 1}, 2).empty());
  EXPECT_EQ(propose({1, 2, 3, 1}, 2, {1, 4}), (std::vector<int32_t>{2, 3}));
}

}  // namespace
}  // namespace lemma::spec
