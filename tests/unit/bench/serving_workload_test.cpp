// Workload generation (determinism, lengths, shared prefixes really shared), arrival times (Poisson
// mean rate, bursts) and the parsing of rates and URLs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <sstream>

#include "lemma/base/error.h"
#include "lemma/bench/serving/arrival.h"
#include "lemma/bench/serving/request_body.h"
#include "lemma/bench/serving/target_url.h"
#include "lemma/bench/serving/workload.h"

namespace lemma::bench::serving {
namespace {

int64_t word_count(const std::string& text) {
  std::istringstream in(text);
  int64_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

TEST(ServingWorkload, SameSeedSameWorkloadOtherSeedOtherPrompts) {
  WorkloadSpec spec;
  spec.num_prompts = 20;
  spec.input_len = 30;
  spec.range_ratio = 0.5;
  spec.seed = 7;
  const auto a = make_workload(spec), b = make_workload(spec);
  ASSERT_EQ(a.size(), 20u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].max_tokens, b[i].max_tokens);
  }
  spec.seed = 8;
  EXPECT_NE(make_workload(spec)[0].prompt, a[0].prompt);
}

TEST(ServingWorkload, FixedLengthsAreExact) {
  WorkloadSpec spec;
  spec.num_prompts = 10;
  spec.input_len = 17;
  spec.output_len = 9;
  std::set<std::string> distinct;
  for (const auto& w : make_workload(spec)) {
    EXPECT_EQ(w.input_words, 17);
    EXPECT_EQ(word_count(w.prompt), 17);
    EXPECT_EQ(w.max_tokens, 9);
    EXPECT_EQ(w.prefix_group, -1);
    distinct.insert(w.prompt);
  }
  EXPECT_EQ(distinct.size(), 10u);  // requests differ, so no accidental prefix hits
}

TEST(ServingWorkload, RandomLengthsStayInTheirRangeAndVary) {
  WorkloadSpec spec;
  spec.num_prompts = 200;
  spec.input_len = 100;
  spec.output_len = 40;
  spec.range_ratio = 0.25;
  std::set<int64_t> inputs;
  for (const auto& w : make_workload(spec)) {
    EXPECT_GE(w.input_words, 75);
    EXPECT_LE(w.input_words, 125);
    EXPECT_EQ(word_count(w.prompt), w.input_words);
    EXPECT_GE(w.max_tokens, 30);
    EXPECT_LE(w.max_tokens, 50);
    inputs.insert(w.input_words);
  }
  EXPECT_GT(inputs.size(), 10u);
}

TEST(ServingWorkload, SharedPrefixesAreReallyShared) {
  WorkloadSpec spec;
  spec.num_prompts = 40;
  spec.input_len = 8;
  spec.shared_prefix_len = 50;
  spec.num_prefixes = 2;
  spec.shared_prefix_fraction = 0.75;
  spec.seed = 3;
  const auto items = make_workload(spec);
  std::string prefix[2];
  int shared = 0, per_group[2] = {0, 0};
  for (const auto& w : items) {
    if (w.prefix_group < 0) {
      EXPECT_EQ(w.input_words, 8);
      continue;
    }
    ++shared;
    ++per_group[w.prefix_group];
    EXPECT_EQ(w.input_words, 58);
    EXPECT_EQ(word_count(w.prompt), 58);
    std::string& p = prefix[w.prefix_group];
    // The first 50 words are the group's prefix, identical in every request of the group.
    std::istringstream in(w.prompt);
    std::string words, word;
    for (int k = 0; k < 50 && in >> word; ++k) words += (k ? " " : "") + word;
    if (p.empty()) p = words;
    EXPECT_EQ(words, p);
    EXPECT_EQ(w.prompt.rfind(p + " ", 0), 0u);
  }
  EXPECT_EQ(shared, 30);  // exactly 75% of 40
  EXPECT_EQ(per_group[0], 15);
  EXPECT_EQ(per_group[1], 15);
  EXPECT_NE(prefix[0], prefix[1]);
}

TEST(ServingWorkload, BadSpecsAreClearErrors) {
  WorkloadSpec spec;
  spec.range_ratio = 1.0;
  EXPECT_THROW(make_workload(spec), InvalidArgument);
  spec = {};
  spec.num_prompts = 0;
  EXPECT_THROW(make_workload(spec), InvalidArgument);
  spec = {};
  spec.shared_prefix_fraction = 1.5;
  EXPECT_THROW(make_workload(spec), InvalidArgument);
}

TEST(ServingArrival, PoissonHasTheAskedMeanRate) {
  const double rate = 40.0;
  const auto offsets = arrival_offsets(20000, rate, 11);
  ASSERT_EQ(offsets.size(), 20000u);
  EXPECT_EQ(offsets.front(), 0.0);
  for (size_t i = 1; i < offsets.size(); ++i) ASSERT_GE(offsets[i], offsets[i - 1]);
  const double measured = static_cast<double>(offsets.size() - 1) / offsets.back();
  EXPECT_NEAR(measured, rate, rate * 0.03);
  // Exponential gaps: the standard deviation equals the mean.
  double sum = 0, squares = 0;
  for (size_t i = 1; i < offsets.size(); ++i) {
    const double g = offsets[i] - offsets[i - 1];
    sum += g;
    squares += g * g;
  }
  const double n = static_cast<double>(offsets.size() - 1), m = sum / n;
  EXPECT_NEAR(std::sqrt(squares / n - m * m), m, m * 0.05);
  EXPECT_EQ(arrival_offsets(100, rate, 11), arrival_offsets(100, rate, 11));
}

TEST(ServingArrival, BurstSendsEverythingAtOnce) {
  for (double t : arrival_offsets(50, parse_request_rate("inf"), 1)) EXPECT_EQ(t, 0.0);
  EXPECT_DOUBLE_EQ(parse_request_rate("2.5"), 2.5);
  EXPECT_THROW(parse_request_rate("0"), InvalidArgument);
  EXPECT_THROW(parse_request_rate("fast"), InvalidArgument);
  EXPECT_THROW(parse_request_rate("3x"), InvalidArgument);
}

TEST(ServingTargetUrl, ParsesHostPortAndPath) {
  auto t = parse_target_url("http://127.0.0.1:8000");
  EXPECT_EQ(t.host, "127.0.0.1");
  EXPECT_EQ(t.port, "8000");
  EXPECT_EQ(t.target("/v1/completions"), "/v1/completions");
  t = parse_target_url("http://example.org/api/v1/");
  EXPECT_EQ(t.port, "80");
  EXPECT_EQ(t.target("/v1/models"), "/api/v1/models");
  EXPECT_EQ(t.host_header(), "example.org");
  EXPECT_THROW(parse_target_url("https://x"), InvalidArgument);
  EXPECT_THROW(parse_target_url("http://x:99999"), InvalidArgument);
  EXPECT_THROW(parse_target_url("http://:80"), InvalidArgument);
}

}  // namespace
}  // namespace lemma::bench::serving

namespace lemma::bench::serving {
namespace {

TEST(ServingRequestBody, ExtraBodyFieldsAreMergedIn) {
  RequestShape shape{Endpoint::kChat, "m", true, true, R"({"response_format": {"type": "json_object"}, "temperature": 0.5})"};
  const auto body = nlohmann::json::parse(request_body(shape, "hi", 8));
  EXPECT_EQ(body["response_format"]["type"], "json_object");
  EXPECT_EQ(body["temperature"], 0.5);  // replaced
  EXPECT_EQ(body["messages"][0]["content"], "hi");
  EXPECT_EQ(body["max_tokens"], 8);
  EXPECT_TRUE(body["ignore_eos"].get<bool>());
  shape.extra_body.clear();
  EXPECT_FALSE(nlohmann::json::parse(request_body(shape, "hi", 8)).contains("response_format"));
}

}  // namespace
}  // namespace lemma::bench::serving
