// When each request of a serving benchmark is sent: a Poisson process at a given rate (exponential
// gaps, seeded) or a burst (every request at time 0). The concurrency limit is applied on top of
// these times by the load runner. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemma::bench::serving {

// Send offsets in seconds from the start, non-decreasing, the first one 0. `rate` in requests/s;
// infinity (or a burst) gives all zeros. Throws InvalidArgument for n < 0 or a rate <= 0.
std::vector<double> arrival_offsets(int64_t n, double rate, uint64_t seed);

// "inf" (any case) or a positive number of requests/s; throws InvalidArgument otherwise.
double parse_request_rate(const std::string& text);

}  // namespace lemma::bench::serving
