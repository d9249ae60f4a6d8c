#include "lemma/bench/serving/arrival.h"

#include <cmath>
#include <limits>

#include "lemma/base/error.h"
#include "lemma/bench/serving/random.h"

namespace lemma::bench::serving {

std::vector<double> arrival_offsets(int64_t n, double rate, uint64_t seed) {
  if (n < 0) throw InvalidArgument("arrival_offsets: negative request count");
  if (!(rate > 0.0)) throw InvalidArgument("--request-rate must be > 0 or inf, got " + std::to_string(rate));
  std::vector<double> offsets(static_cast<size_t>(n), 0.0);
  if (std::isinf(rate)) return offsets;
  SeededRandom rng(seed ^ 0x9e3779b97f4a7c15ULL);
  for (size_t i = 1; i < offsets.size(); ++i) offsets[i] = offsets[i - 1] + rng.exponential(rate);
  return offsets;
}

double parse_request_rate(const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "inf" || lower == "infinity") return std::numeric_limits<double>::infinity();
  size_t used = 0;
  double rate = 0.0;
  try {
    rate = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(rate > 0.0) || std::isinf(rate)) {
    throw InvalidArgument("--request-rate must be a positive number of requests/s or \"inf\", got \"" + text + "\"");
  }
  return rate;
}

}  // namespace lemma::bench::serving
