#include "lemma/bench/decode_roofline.h"

#include <algorithm>
#include <string>

#include "lemma/base/error.h"
#include "lemma/bench/statistics.h"

namespace lemma::bench {

DecodeRoofline decode_roofline(std::span<const double> tokens_per_s, std::span<const double> readings_gbps,
                               double bytes_per_token) {
  const size_t reps = tokens_per_s.size();
  if (reps == 0) throw InvalidArgument("decode roofline: no repetitions");
  if (readings_gbps.size() != reps + 1 && readings_gbps.size() != 1) {
    throw InvalidArgument("decode roofline: " + std::to_string(readings_gbps.size()) + " bandwidth readings for " +
                          std::to_string(reps) + " repetitions (need one, or one more than the repetitions)");
  }
  if (!(bytes_per_token > 0.0)) throw InvalidArgument("decode roofline: bytes per token must be > 0");
  for (double g : readings_gbps) {
    if (!(g > 0.0)) throw InvalidArgument("decode roofline: bandwidth reading " + std::to_string(g) + " GB/s is not > 0");
  }
  DecodeRoofline out;
  std::vector<double> bandwidths, fractions;
  for (size_t r = 0; r < reps; ++r) {
    RepRoofline rep;
    rep.bandwidth_gbps = readings_gbps.size() == 1 ? readings_gbps[0] : std::max(readings_gbps[r], readings_gbps[r + 1]);
    rep.roofline_tokens_per_s = rep.bandwidth_gbps * 1e9 / bytes_per_token;
    rep.fraction = tokens_per_s[r] / rep.roofline_tokens_per_s;
    bandwidths.push_back(rep.bandwidth_gbps);
    fractions.push_back(rep.fraction);
    out.reps.push_back(rep);
  }
  out.bandwidth_gbps = percentile(bandwidths, 50.0);
  out.roofline_tokens_per_s = out.bandwidth_gbps * 1e9 / bytes_per_token;
  out.fraction = percentile(fractions, 50.0);
  return out;
}

}  // namespace lemma::bench
