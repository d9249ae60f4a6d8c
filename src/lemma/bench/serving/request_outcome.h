// What one benchmark request measured: success or the reason it failed, and its timings in seconds
// (TTFT, E2E and the gaps between content chunks) and token counts. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemma::bench::serving {

struct RequestOutcome {
  bool ok = false;
  std::string error;            // why it failed (empty when ok)
  double start_s = 0.0;         // when it was sent, from the benchmark's start
  double ttft_s = 0.0;          // send -> first non-empty content chunk
  double e2e_s = 0.0;           // send -> last byte of the response
  std::vector<double> itl_s;    // gaps between consecutive content chunks
  int64_t prompt_tokens = 0;    // from usage, else the workload's estimate
  int64_t output_tokens = 0;    // from usage, else the number of content chunks
  bool usage_reported = false;  // the token counts came from the server's usage
  // (e2e - ttft) / (output_tokens - 1); only defined for more than one output token.
  bool has_tpot() const { return output_tokens > 1; }
  double tpot_s() const { return has_tpot() ? (e2e_s - ttft_s) / static_cast<double>(output_tokens - 1) : 0.0; }
};

}  // namespace lemma::bench::serving
