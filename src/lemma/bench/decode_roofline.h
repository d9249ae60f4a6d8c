// Decode's bandwidth roofline, one figure per timed repetition. On shared or virtual machines the
// memory bandwidth moves by 2x within minutes, so one reading before (or after) a benchmark can sit
// in a different window from the runs it is held against. `lemma bench` therefore reads the
// bandwidth before the first decode repetition and after each one, and holds every repetition
// against the higher of the two readings beside it: a fraction never rests on a slow reading the
// repetition did not see, nor on one taken minutes away. Pure functions; thread-safe.
#pragma once

#include <span>
#include <vector>

namespace lemma::bench {

struct RepRoofline {
  double bandwidth_gbps = 0.0;         // the higher of the readings before and after this rep
  double roofline_tokens_per_s = 0.0;  // bandwidth / bytes per token
  double fraction = 0.0;               // achieved tokens/s over the roofline
};

struct DecodeRoofline {
  std::vector<RepRoofline> reps;       // one per timed repetition, in order
  double bandwidth_gbps = 0.0;         // median of the reps' bandwidths
  double roofline_tokens_per_s = 0.0;  // at that median bandwidth
  double fraction = 0.0;               // median of the reps' fractions
};

// `readings_gbps` holds reps + 1 readings (before rep 1, then after each rep), or a single one (a
// bandwidth given by the user, used for every rep). Throws InvalidArgument for other counts, no
// reps, a bytes_per_token <= 0 or a reading <= 0.
DecodeRoofline decode_roofline(std::span<const double> tokens_per_s, std::span<const double> readings_gbps,
                               double bytes_per_token);

}  // namespace lemma::bench
