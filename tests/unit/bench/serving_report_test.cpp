// Serving report figures on known outcomes: throughput, TTFT/TPOT/ITL/E2E summaries, goodput and
// failure grouping; the table and JSON carry them.
#include <gtest/gtest.h>

#include <vector>

#include "lemma/bench/serving/serving_report.h"

namespace lemma::bench::serving {
namespace {

RequestOutcome ok_outcome(double ttft_s, double e2e_s, int64_t output_tokens, std::vector<double> itl = {}) {
  RequestOutcome o;
  o.ok = true;
  o.ttft_s = ttft_s;
  o.e2e_s = e2e_s;
  o.output_tokens = output_tokens;
  o.prompt_tokens = 10;
  o.usage_reported = true;
  o.itl_s = std::move(itl);
  return o;
}

RequestOutcome failed(const std::string& why) {
  RequestOutcome o;
  o.error = why;
  return o;
}

TEST(ServingReport, ThroughputAndSummariesOnKnownInputs) {
  // TTFTs 0.1..0.5 s; E2E = TTFT + 0.9 s over 10 tokens, so TPOT = 0.1 s for every request.
  std::vector<RequestOutcome> outcomes;
  for (int i = 1; i <= 5; ++i) outcomes.push_back(ok_outcome(0.1 * i, 0.1 * i + 0.9, 10, {0.1, 0.2}));
  outcomes.push_back(failed("HTTP 500: boom"));
  outcomes.push_back(failed("HTTP 500: boom"));
  outcomes.push_back(failed("no content in the stream"));
  const ServingReport r = make_serving_report(outcomes, 2.0, {});
  EXPECT_EQ(r.num_requests, 8);
  EXPECT_EQ(r.completed, 5);
  EXPECT_EQ(r.failed, 3);
  EXPECT_EQ(r.failures.at("HTTP 500: boom"), 2);
  EXPECT_EQ(r.failures.at("no content in the stream"), 1);
  EXPECT_EQ(r.output_tokens, 50);
  EXPECT_EQ(r.input_tokens, 50);
  EXPECT_EQ(r.usage_reported, 5);
  EXPECT_DOUBLE_EQ(r.request_throughput, 2.5);
  EXPECT_DOUBLE_EQ(r.output_throughput, 25.0);
  EXPECT_DOUBLE_EQ(r.total_token_throughput, 50.0);
  EXPECT_EQ(r.ttft_ms.count, 5);
  EXPECT_NEAR(r.ttft_ms.mean, 300.0, 1e-9);
  EXPECT_NEAR(r.ttft_ms.p50, 300.0, 1e-9);
  EXPECT_NEAR(r.ttft_ms.p90, 460.0, 1e-9);  // rank 3.6 between 400 and 500
  EXPECT_NEAR(r.ttft_ms.p99, 496.0, 1e-9);
  EXPECT_NEAR(r.tpot_ms.mean, 100.0, 1e-9);
  EXPECT_NEAR(r.tpot_ms.p99, 100.0, 1e-9);
  EXPECT_EQ(r.itl_ms.count, 10);  // every gap of every request
  EXPECT_NEAR(r.itl_ms.mean, 150.0, 1e-9);
  EXPECT_NEAR(r.itl_ms.p50, 150.0, 1e-9);
  EXPECT_NEAR(r.e2e_ms.mean, 1200.0, 1e-9);
  EXPECT_EQ(r.good_requests, 0);  // no SLO given
}

TEST(ServingReport, GoodputCountsRequestsWithinBothBounds) {
  std::vector<RequestOutcome> outcomes = {
      ok_outcome(0.05, 0.05 + 9 * 0.02, 10),  // ttft 50 ms, tpot 20 ms: good
      ok_outcome(0.30, 0.30 + 9 * 0.02, 10),  // ttft too slow
      ok_outcome(0.05, 0.05 + 9 * 0.08, 10),  // tpot too slow
      ok_outcome(0.05, 0.05, 1),              // one token: no TPOT, meets that bound
      failed("read: end of stream")};         // failures are never good
  const ServingReport r = make_serving_report(outcomes, 4.0, Slo{100.0, 50.0});
  EXPECT_EQ(r.good_requests, 2);
  EXPECT_DOUBLE_EQ(r.goodput, 0.5);
  EXPECT_EQ(r.tpot_ms.count, 3);  // the one-token request has no TPOT
  const ServingReport ttft_only = make_serving_report(outcomes, 4.0, Slo{100.0, 0.0});
  EXPECT_EQ(ttft_only.good_requests, 3);
}

TEST(ServingReport, NoCompletedRequestsGivesZeros) {
  std::vector<RequestOutcome> outcomes = {failed("connect: Connection refused")};
  const ServingReport r = make_serving_report(outcomes, 0.0, Slo{100.0, 0.0});
  EXPECT_EQ(r.completed, 0);
  EXPECT_EQ(r.request_throughput, 0.0);
  EXPECT_EQ(r.ttft_ms.count, 0);
  EXPECT_EQ(r.goodput, 0.0);
}

TEST(ServingReport, TableAndJsonCarryTheFigures) {
  std::vector<RequestOutcome> outcomes = {ok_outcome(0.1, 1.0, 10, {0.1}), failed("HTTP 503: busy")};
  const ServingReport r = make_serving_report(outcomes, 1.0, Slo{200.0, 0.0});
  const RunLabel label{"http://x:1", "m", "completions", "w", "burst"};
  const std::string table = format_serving_table(r, label);
  for (const char* needle : {"TTFT", "TPOT", "ITL", "E2E", "goodput", "HTTP 503: busy", "requests/s", "output tokens/s"}) {
    EXPECT_NE(table.find(needle), std::string::npos) << needle << "\n" << table;
  }
  const auto j = serving_report_json(r, label);
  EXPECT_EQ(j["completed"], 1);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_EQ(j["failures"]["HTTP 503: busy"], 1);
  EXPECT_DOUBLE_EQ(j["ttft_ms"]["p50"].get<double>(), 100.0);
  EXPECT_EQ(j["good_requests"], 1);
  EXPECT_TRUE(j.contains("goodput"));
}

}  // namespace
}  // namespace lemma::bench::serving
