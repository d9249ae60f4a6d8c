// `--trace FILE` on the real binary (stories260K): the file parses as Trace Event Format JSON, has
// the forward's named ranges nested as forward > layer > kernel, and is written for any command;
// `lemma bench --model M --json` prints one object per line with the keys issue 5 names.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unistd.h>

#include "run_command.h"
#include "support/shared_data.h"
#include "support/trace_json_check.h"

namespace lemma::testing {
namespace {

CommandResult lemma(const std::string& args) { return run_command(shell_quote(LEMMA_BINARY) + " " + args); }

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

std::filesystem::path temp_trace(const char* tag) {
  return std::filesystem::temp_directory_path() / ("lemma_cli_trace_" + std::string(tag) + "_" + std::to_string(::getpid()) + ".json");
}

std::vector<TraceRange> read_trace(const std::filesystem::path& path) {
  const auto json = nlohmann::json::parse(read_file(path));
  std::string why;
  auto ranges = trace_ranges(json, why);
  EXPECT_EQ(why, "");
  EXPECT_EQ(nesting_error(ranges), "");
  return ranges;
}

TEST(CliTrace, GenerateWritesNestedForwardLayerAndKernelRanges) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto path = temp_trace("generate");
  const auto r = lemma("generate --model " + shell_quote(stories()) + " --prompt-ids 1,403,407 --max-tokens 4 " +
                       "--temperature 0 --ignore-eos --threads 2 --trace " + shell_quote(path.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto ranges = read_trace(path);
  std::filesystem::remove(path);
  const auto names = range_names(ranges);
  for (const char* n : {"engine_step", "schedule", "update", "forward", "layer", "attn_norm", "qkv", "rope_kv_write", "attention",
                        "o_proj", "add_ffn_norm", "gate_up", "silu_mul", "down", "add_attn_norm", "add_final_norm", "lm_head", "sampling"})
    EXPECT_TRUE(names.contains(n)) << n;
  int layers = 0, forwards = 0;
  for (const auto& x : ranges) {
    if (x.name == "layer") {
      ++layers;
      EXPECT_EQ(parent_name(ranges, x), "forward");
    }
    if (x.name == "qkv" || x.name == "gate_up") {
      EXPECT_EQ(parent_name(ranges, x), "layer");
    }
    if (x.name == "lm_head") {
      EXPECT_EQ(parent_name(ranges, x), "forward");
    }
    if (x.name == "forward") {
      ++forwards;
      EXPECT_EQ(parent_name(ranges, x), "engine_step");  // generate runs through the Engine
    }
  }
  EXPECT_EQ(forwards, 4);
  EXPECT_EQ(layers, 4 * 5);  // stories260K has 5 layers
}

TEST(CliTrace, TraceFlagWorksAfterAnySubcommandAndBeforeIt) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto path = temp_trace("perplexity");
  const auto r = lemma("--trace " + shell_quote(path.string()) + " logits --model " + shell_quote(stories()) + " --ids 1,2,3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(range_names(read_trace(path)).contains("forward"));
  std::filesystem::remove(path);
}

TEST(CliTrace, UnwritableTraceFileIsAUserError) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto r = lemma("logits --model " + shell_quote(stories()) + " --ids 1,2 --trace /nonexistent-dir/t.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent-dir/t.json"), std::string::npos) << r.err;
}

TEST(CliBenchModel, IssueFormJsonHasOneObjectPerLineWithTheNamedKeys) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto r = lemma("bench --model " + shell_quote(stories()) + " -p 16 -n 8 -t 1 -r 2 --batch 2 --json --bandwidth 10 " +
                       "--peak-gflops 100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<nlohmann::json> objects;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);  // throws (fails the test) unless the line is one JSON value
    ASSERT_TRUE(j.is_object()) << line;
    objects.push_back(j);
  }
  ASSERT_EQ(objects.size(), 2u) << r.out;
  EXPECT_EQ(objects[0]["test"], "pp16");
  EXPECT_EQ(objects[0]["batch"], 1);
  EXPECT_EQ(objects[1]["test"], "tg8");
  EXPECT_EQ(objects[1]["batch"], 2);
  for (const auto& o : objects) {
    for (const char* key : {"test", "threads", "batch", "tokens_per_s", "stddev"}) EXPECT_TRUE(o.contains(key)) << key;
    EXPECT_EQ(o["threads"], 1);
    EXPECT_TRUE(o["tokens_per_s"].is_number());
    EXPECT_GT(o["tokens_per_s"].get<double>(), 0.0);
    EXPECT_GE(o["stddev"].get<double>(), 0.0);
  }
  const double overhead = objects[1]["framework_overhead_fraction"].get<double>();
  EXPECT_GE(overhead, 0.0);
  EXPECT_LT(overhead, 1.0);
}

TEST(CliBenchModel, BenchWithoutModelOrSubcommandNamesWhatIsMissing) {
  const auto r = lemma("bench");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lemma::testing
