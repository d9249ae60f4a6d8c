// `lemma bench roofline|model|capacity|serve` through the real binary on the tiny preset: each runs
// and prints its figures (which are never compared with a speed), and bad arguments are refused.
// (`bench serve` against a live server is tested in serving_e2e_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "golden_models.h"
#include "run_command.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

CommandResult lemma(const std::string& args) { return run_command(shell_quote(LEMMA_BINARY) + " " + args); }

std::string tiny_model() {
  std::string why;
  const auto files = ensure_preset("tiny", why);
  return files ? files->gguf.string() : std::string();
}

// Skips without the tiny preset; under CI=true that is a failure.
#define REQUIRE_TINY(path)                                                         \
  do {                                                                             \
    if ((path).empty()) {                                                          \
      const char* why = "tiny preset unavailable (no /usr/bin/python3 with numpy)"; \
      if (running_in_ci()) FAIL() << why;                                          \
      GTEST_SKIP() << why;                                                         \
    }                                                                              \
  } while (0)

TEST(CliBench, ModelPrintsPrefillAndDecodeFigures) {
  const std::string model = tiny_model();
  REQUIRE_TINY(model);
  const auto r = lemma("bench model --model " + shell_quote(model) + " --pp 8 --tg 4 --reps 1 --threads 2 --buffer-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"matmul kernel:", "roofline:", "workload: pp8, tg4, batch 1", "pp8 ", "tg4 ", "GB/s achieved", "isa:",
                        "bandwidth read before the reps and after each:", "fraction per rep"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

TEST(CliBench, ModelJsonIsOneObjectPerTest) {
  const std::string model = tiny_model();
  REQUIRE_TINY(model);
  const auto r = lemma("bench model --json --model " + shell_quote(model) +
                       " -p 8 -n 4 -r 2 --batch 3 -t 1 --bandwidth 10 --peak-gflops 100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<nlohmann::json> objects;
  for (std::string line; std::getline(lines, line);) objects.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(objects.size(), 2u) << r.out;
  EXPECT_EQ(objects[0]["test"], "pp8");
  EXPECT_EQ(objects[0]["batch"], 1);
  EXPECT_EQ(objects[1]["test"], "tg4");
  EXPECT_EQ(objects[1]["batch"], 3);
  for (const auto& o : objects) {
    EXPECT_EQ(o["threads"], 1);
    EXPECT_EQ(o["reps"], 2);
    EXPECT_GT(o["tokens_per_s"].get<double>(), 0.0);
    EXPECT_GE(o["stddev"].get<double>(), 0.0);
    EXPECT_FALSE(o["kernel"].get<std::string>().empty());
  }
  EXPECT_DOUBLE_EQ(objects[1]["bandwidth_gbps"].get<double>(), 10.0);
  // tg's roofline is the given bandwidth over the bytes each token reads.
  EXPECT_NEAR(objects[1]["roofline_tokens_per_s"].get<double>(), 10e9 / objects[1]["bytes_per_token"].get<double>(), 1e-6);
}

// Measured bandwidth is read before the first decode rep and after each; every rep is held against
// the higher reading beside it, and the reported fraction is the median of the reps'.
TEST(CliBench, DecodeFractionsUseTheBandwidthReadAroundEachRep) {
  const std::string model = tiny_model();
  REQUIRE_TINY(model);
  const auto r = lemma("bench model --json --model " + shell_quote(model) + " -p 0 -n 4 -r 3 -t 1 --buffer-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto readings = j["bandwidth_readings_gbps"].get<std::vector<double>>();
  const auto fractions = j["roofline_fraction_per_rep"].get<std::vector<double>>();
  ASSERT_EQ(readings.size(), 4u);
  ASSERT_EQ(fractions.size(), 3u);
  for (double g : readings) EXPECT_GT(g, 0.0);
  std::vector<double> used = {std::max(readings[0], readings[1]), std::max(readings[1], readings[2]),
                              std::max(readings[2], readings[3])};
  std::sort(used.begin(), used.end());
  EXPECT_DOUBLE_EQ(j["bandwidth_gbps"].get<double>(), used[1]);
  EXPECT_NEAR(j["roofline_tokens_per_s"].get<double>(), used[1] * 1e9 / j["bytes_per_token"].get<double>(), 1e-6);
  std::vector<double> sorted = fractions;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_DOUBLE_EQ(j["roofline_fraction"].get<double>(), sorted[1]);
}

TEST(CliBench, CapacityPrintsMaxSequences) {
  const std::string model = tiny_model();
  REQUIRE_TINY(model);
  const auto r = lemma("bench capacity --model " + shell_quote(model) + " --memory-gb 1 --ctx 512");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"kv bytes per token:", "weight bytes:", "max concurrent sequences:"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

TEST(CliBench, RooflinePrintsBandwidthAndPeaks) {
  const auto r = lemma("bench roofline --threads 1 --buffer-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bandwidth (read, best of 5 passes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB/s"), std::string::npos) << r.out;
}

TEST(CliBench, RooflineJsonHasBandwidthAndOnePeakPerProbe) {
  const auto r = lemma("bench roofline --json --threads 2 --buffer-mib 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["test"], "roofline");
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["pass_gbps"].size(), 5u);
  EXPECT_GT(j["bandwidth_gbps"].get<double>(), 0.0);
  for (const auto& [name, gflops] : j["peak_gflops"].items()) EXPECT_GT(gflops.get<double>(), 0.0) << name;
}

TEST(CliBench, RefusesBadArguments) {
  EXPECT_NE(lemma("bench").exit_code, 0);
  EXPECT_NE(lemma("bench model").exit_code, 0);  // --model is required
  const std::string model = tiny_model();
  REQUIRE_TINY(model);
  const auto r = lemma("bench model --model " + shell_quote(model) + " --reps 0 --bandwidth 1 --peak-gflops 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("reps"), std::string::npos) << r.err;
}

TEST(CliBench, ServeRefusesBadArgumentsAndReportsUnreachableServers) {
  const std::string url = " --url http://127.0.0.1:1 --model m --num-prompts 2";
  for (const char* bad : {" --endpoint embeddings", " --request-rate fast", " --random-range-ratio 1.5", " --concurrency -1"}) {
    const auto r = lemma("bench serve" + url + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find("--"), std::string::npos) << r.err;  // names the option
  }
  EXPECT_EQ(lemma("bench serve --url https://127.0.0.1:1 --model m").exit_code, 1);
  // Nothing listens on port 1: every request fails with its reason, and the exit code says so.
  const auto r = lemma("bench serve --json" + url);
  EXPECT_EQ(r.exit_code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["failed"], 2);
  EXPECT_EQ(j["completed"], 0);
  EXPECT_EQ(j["failures"].begin().key().rfind("connect", 0), 0u) << r.out;
}

}  // namespace
}  // namespace lemma::testing
