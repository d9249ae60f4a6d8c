// The figures of a serving benchmark, made from its request outcomes: throughput (requests/s,
// output and total tokens/s), TTFT/TPOT/ITL/E2E summaries in milliseconds, goodput under an SLO, and
// failures grouped by reason; printed as a table or one JSON object. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "lemma/bench/serving/request_outcome.h"
#include "lemma/bench/statistics.h"

namespace lemma::bench::serving {

// A request meets the SLO when its TTFT <= ttft_ms and its TPOT <= tpot_ms (0 = no bound; a request
// with one output token has no TPOT and meets that bound).
struct Slo {
  double ttft_ms = 0.0, tpot_ms = 0.0;
  bool any() const { return ttft_ms > 0.0 || tpot_ms > 0.0; }
};

struct ServingReport {
  int64_t num_requests = 0, completed = 0, failed = 0;
  double duration_s = 0.0;                      // first send -> last response end
  int64_t input_tokens = 0, output_tokens = 0;  // over completed requests
  int64_t usage_reported = 0;                   // completed requests whose counts came from usage
  double request_throughput = 0.0;              // completed / duration
  double output_throughput = 0.0;               // output tokens / duration
  double total_token_throughput = 0.0;          // (input + output tokens) / duration
  Summary ttft_ms, tpot_ms, itl_ms, e2e_ms;     // over completed requests (ITL over all their gaps)
  Slo slo;
  int64_t good_requests = 0;  // completed and within the SLO (only when slo.any())
  double goodput = 0.0;       // good_requests / duration
  std::map<std::string, int64_t> failures;  // reason -> count
};

ServingReport make_serving_report(std::span<const RequestOutcome> outcomes, double duration_s, const Slo& slo);

// A few header lines describing the run (target, workload), printed above the table.
struct RunLabel {
  std::string url, model, endpoint, workload, arrivals;
};
std::string format_serving_table(const ServingReport& report, const RunLabel& label);
nlohmann::json serving_report_json(const ServingReport& report, const RunLabel& label);

}  // namespace lemma::bench::serving
