#include "lemma/bench/statistics.h"

#include <gtest/gtest.h>

#include <vector>

#include "lemma/base/error.h"

namespace lemma::bench {
namespace {

TEST(Statistics, MeanAndSampleStddev) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(v), 5.0);
  // Sum of squared deviations 32 over n - 1 = 7.
  EXPECT_NEAR(sample_stddev(v), std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_EQ(sample_stddev(std::vector<double>{3.0}), 0.0);
  EXPECT_EQ(mean(std::vector<double>{}), 0.0);
}

TEST(Statistics, PercentilesInterpolateLikeNumpy) {
  // numpy.percentile([1..10], q): 50 -> 5.5, 90 -> 9.1, 99 -> 9.91, 0 -> 1, 100 -> 10.
  const std::vector<double> v = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};  // unsorted on purpose
  EXPECT_DOUBLE_EQ(percentile(v, 50), 5.5);
  EXPECT_NEAR(percentile(v, 90), 9.1, 1e-12);
  EXPECT_NEAR(percentile(v, 99), 9.91, 1e-12);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 10.0);
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{7.0}, 99), 7.0);
}

TEST(Statistics, PercentileRejectsBadInput) {
  EXPECT_THROW(percentile(std::vector<double>{}, 50), InvalidArgument);
  EXPECT_THROW(percentile(std::vector<double>{1.0}, 101), InvalidArgument);
  EXPECT_THROW(percentile(std::vector<double>{1.0}, -1), InvalidArgument);
}

TEST(Statistics, SummarizeAgreesWithTheParts) {
  const std::vector<double> v = {3.5, 1.0, 2.0, 8.0, 4.5};
  const Summary s = summarize(v);
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.mean, mean(v));
  EXPECT_DOUBLE_EQ(s.stddev, sample_stddev(v));
  EXPECT_EQ(s.min, 1.0);
  EXPECT_EQ(s.max, 8.0);
  EXPECT_DOUBLE_EQ(s.p50, 3.5);
  EXPECT_DOUBLE_EQ(s.p90, percentile(v, 90));
  EXPECT_DOUBLE_EQ(s.p99, percentile(v, 99));
  EXPECT_EQ(summarize(std::vector<double>{}).count, 0);
}

}  // namespace
}  // namespace lemma::bench
