// Summary statistics of repeated measurements (timings, tokens/s): mean, sample standard deviation
// (n - 1, as llama-bench reports it) and linearly interpolated percentiles (numpy's default).
// Pure functions; thread-safe.
#pragma once

#include <span>

namespace lemma::bench {

struct Summary {
  int count = 0;
  double mean = 0.0;
  double stddev = 0.0;  // sample standard deviation; 0 for fewer than two values
  double min = 0.0, max = 0.0;
  double p50 = 0.0, p90 = 0.0, p99 = 0.0;
};

double mean(std::span<const double> values);  // 0 for no values
double sample_stddev(std::span<const double> values);
// The q-th percentile (q in [0, 100]) with linear interpolation between closest ranks; `values`
// need not be sorted. Throws InvalidArgument for no values or q outside [0, 100].
double percentile(std::span<const double> values, double q);
// Everything above at once; an empty input gives a zero Summary.
Summary summarize(std::span<const double> values);

}  // namespace lemma::bench
