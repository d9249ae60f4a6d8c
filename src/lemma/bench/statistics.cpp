#include "lemma/bench/statistics.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lemma/base/error.h"

namespace lemma::bench {

namespace {
double sorted_percentile(const std::vector<double>& sorted, double q) {
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<size_t>(std::floor(rank));
  const size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}
}  // namespace

double mean(std::span<const double> values) {
  if (values.empty()) return 0.0;
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double sample_stddev(std::span<const double> values) {
  if (values.size() < 2) return 0.0;
  const double m = mean(values);
  double squares = 0.0;
  for (double v : values) squares += (v - m) * (v - m);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

double percentile(std::span<const double> values, double q) {
  if (values.empty()) throw InvalidArgument("percentile of no values");
  if (!(q >= 0.0 && q <= 100.0)) throw InvalidArgument("percentile " + std::to_string(q) + " is outside [0, 100]");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted_percentile(sorted, q);
}

Summary summarize(std::span<const double> values) {
  Summary s;
  if (values.empty()) return s;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  s.count = static_cast<int>(sorted.size());
  s.mean = mean(values);
  s.stddev = sample_stddev(values);
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = sorted_percentile(sorted, 50.0);
  s.p90 = sorted_percentile(sorted, 90.0);
  s.p99 = sorted_percentile(sorted, 99.0);
  return s;
}

}  // namespace lemma::bench
