// `lemma bench serve`'s engine: builds the workload and the arrival times, sends every request to
// an OpenAI-compatible server on one Asio thread (Poisson or burst arrivals, an optional limit on
// requests in flight), reports progress about once a second, and makes the ServingReport.
// Blocking; run one at a time per thread.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "lemma/bench/serving/request_outcome.h"
#include "lemma/bench/serving/serving_report.h"
#include "lemma/bench/serving/stream_validator.h"
#include "lemma/bench/serving/workload.h"

namespace lemma::bench::serving {

struct ServingBenchOptions {
  std::string url = "http://127.0.0.1:8000";
  std::string model;  // "" = the first id GET /v1/models lists
  Endpoint endpoint = Endpoint::kCompletions;
  WorkloadSpec workload;    // lengths in words, or in tokens with calibrate_tokens
  bool calibrate_tokens = false;  // ask POST /tokenize for tokens/word and turn token lengths into words
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s; inf = burst
  int64_t concurrency = 0;                                        // max requests in flight; 0 = no limit
  std::string api_key;
  bool ignore_eos = false;
  std::string extra_body;     // JSON object merged into every request body (RequestShape::extra_body)
  bool include_usage = true;  // send stream_options.include_usage and require usage back
  Slo slo;
  double request_timeout_s = 600.0;
};

struct Progress {
  int64_t completed = 0, failed = 0, in_flight = 0, total = 0;
  double elapsed_s = 0.0;
};
using ProgressFn = std::function<void(const Progress&)>;

struct ServingRun {
  ServingReport report;
  RunLabel label;
  std::vector<RequestOutcome> outcomes;  // in workload order
};

// Throws InvalidArgument for bad options, or when the model name or the calibration cannot be found
// out (with the server's answer); failures of individual requests are counted in the report, never
// thrown.
ServingRun run_serving_benchmark(const ServingBenchOptions& options, const ProgressFn& progress = {});

}  // namespace lemma::bench::serving
