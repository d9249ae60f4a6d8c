// decode_roofline: each rep against the higher bandwidth reading beside it; medians reported.
#include "lemma/bench/decode_roofline.h"

#include <gtest/gtest.h>

#include <vector>

#include "lemma/base/error.h"

namespace lemma::bench {
namespace {

TEST(DecodeRoofline, EachRepUsesTheHigherReadingBesideIt) {
  // 1e9 bytes per token: roofline tokens/s = GB/s.
  const std::vector<double> rates = {9.0, 12.0, 6.0};
  const std::vector<double> readings = {10.0, 20.0, 15.0, 30.0};
  const auto r = decode_roofline(rates, readings, 1e9);
  ASSERT_EQ(r.reps.size(), 3u);
  EXPECT_DOUBLE_EQ(r.reps[0].bandwidth_gbps, 20.0);
  EXPECT_DOUBLE_EQ(r.reps[1].bandwidth_gbps, 20.0);
  EXPECT_DOUBLE_EQ(r.reps[2].bandwidth_gbps, 30.0);
  EXPECT_DOUBLE_EQ(r.reps[0].roofline_tokens_per_s, 20.0);
  EXPECT_DOUBLE_EQ(r.reps[0].fraction, 0.45);
  EXPECT_DOUBLE_EQ(r.reps[1].fraction, 0.6);
  EXPECT_DOUBLE_EQ(r.reps[2].fraction, 0.2);
  EXPECT_DOUBLE_EQ(r.fraction, 0.45);        // median of 0.45, 0.6, 0.2
  EXPECT_DOUBLE_EQ(r.bandwidth_gbps, 20.0);  // median of 20, 20, 30
  EXPECT_DOUBLE_EQ(r.roofline_tokens_per_s, 20.0);
}

TEST(DecodeRoofline, AGivenBandwidthHoldsForEveryRep) {
  const std::vector<double> rates = {5.0, 10.0};
  const std::vector<double> given = {20.0};
  const auto r = decode_roofline(rates, given, 2e9);  // roofline 10 tokens/s
  ASSERT_EQ(r.reps.size(), 2u);
  EXPECT_DOUBLE_EQ(r.reps[0].fraction, 0.5);
  EXPECT_DOUBLE_EQ(r.reps[1].fraction, 1.0);
  EXPECT_DOUBLE_EQ(r.fraction, 0.75);  // median of two: their mean
  EXPECT_DOUBLE_EQ(r.roofline_tokens_per_s, 10.0);
}

TEST(DecodeRoofline, RefusesMismatchedOrBadInput) {
  const std::vector<double> rates = {5.0, 10.0};
  EXPECT_THROW(decode_roofline(rates, std::vector<double>{1.0, 2.0}, 1e9), InvalidArgument);  // reps + 1 or 1
  EXPECT_THROW(decode_roofline({}, std::vector<double>{1.0}, 1e9), InvalidArgument);
  EXPECT_THROW(decode_roofline(rates, std::vector<double>{1.0}, 0.0), InvalidArgument);
  EXPECT_THROW(decode_roofline(rates, std::vector<double>{1.0, 0.0, 2.0}, 1e9), InvalidArgument);
}

}  // namespace
}  // namespace lemma::bench
