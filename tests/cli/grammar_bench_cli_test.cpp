// `lemma bench grammar` through the real binary on a handful of MaskBench files with the Llama-3
// tokenizer: every compiled schema decides each test right (no valid instance refused, no invalid
// one accepted), and the JSON and table forms carry the figures.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_command.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

CommandResult lemma(const std::string& args) { return run_command(shell_quote(LEMMA_BINARY) + " " + args); }

// A few files of different kinds (function calls, GitHub schemas with $ref/anyOf), one that does not compile.
const char* kFiles[] = {"BFCL_java_16.json", "BFCL_parallel_multiple_167.json", "Github_easy---o13683.json",
                        "Github_easy---o43974.json", "Github_easy---o69762.json", "Github_hard---o69207.json"};

std::filesystem::path sample_dir() {
  const auto dir = build_scratch("maskbench_sample");
  for (const char* f : kFiles) {
    std::filesystem::copy_file(shared_data("maskbench") / f, dir / f, std::filesystem::copy_options::overwrite_existing);
  }
  return dir;
}

TEST(CliBenchGrammar, CompiledSchemasDecideEveryTestRight) {
  const auto tokenizer = shared_data("hf/llama3");
  LEMMA_REQUIRE_SHARED(tokenizer / "tokenizer.json");
  LEMMA_REQUIRE_SHARED(shared_data("maskbench") / kFiles[0]);
  const auto dir = sample_dir();
  const auto r = lemma("bench grammar --tokenizer " + shell_quote(tokenizer.string()) + " " + shell_quote(dir.string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schemas"], std::size(kFiles));
  EXPECT_GE(j["compiled"].get<int>(), 5);
  EXPECT_EQ(j["passing"], j["compiled"]);
  EXPECT_EQ(j["valid_rejected"], 0);
  EXPECT_EQ(j["invalid_accepted"], 0);
  EXPECT_GT(j["masks"].get<int>(), 100);
  for (const char* k : {"avg", "p50", "p99"}) EXPECT_TRUE(j["ttfm_us"].contains(k)) << k;
  for (const char* k : {"avg", "p50", "p99", "p999"}) EXPECT_TRUE(j["tbm_us"].contains(k)) << k;
  EXPECT_NE(r.err.find("[6/6]"), std::string::npos) << "progress line on stderr";
}

// The whole of ../shared/data/maskbench, in four shards run as separate tests (ctest -j): no valid
// instance of a compiled schema refused, no invalid one accepted.
class CliBenchGrammarShard : public ::testing::TestWithParam<int> {};

TEST_P(CliBenchGrammarShard, EveryFileDecidesEveryTestRight) {
  const auto tokenizer = shared_data("hf/llama3");
  LEMMA_REQUIRE_SHARED(tokenizer / "tokenizer.json");
  LEMMA_REQUIRE_SHARED(shared_data("maskbench") / kFiles[0]);
  const auto r = lemma("bench grammar --tokenizer " + shell_quote(tokenizer.string()) + " " +
                       shell_quote(shared_data("maskbench").string()) + " --json -v --shard " + std::to_string(GetParam()) + "/4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["schemas"].get<int>(), 400);
  EXPECT_EQ(j["valid_rejected"], 0) << r.err;
  EXPECT_EQ(j["invalid_accepted"], 0) << r.err;
  EXPECT_EQ(j["passing"], j["compiled"]);
}

INSTANTIATE_TEST_SUITE_P(MaskBench, CliBenchGrammarShard, ::testing::Range(0, 4));

TEST(CliBenchGrammar, TableFormAndBadArguments) {
  const auto tokenizer = shared_data("hf/llama3");
  LEMMA_REQUIRE_SHARED(tokenizer / "tokenizer.json");
  LEMMA_REQUIRE_SHARED(shared_data("maskbench") / kFiles[0]);
  const auto dir = sample_dir();
  const auto r = lemma("bench grammar --tokenizer " + shell_quote(tokenizer.string()) + " " + shell_quote(dir.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"schemas", "compiled", "passing", "valid rejected", "invalid accepted", "TTFM us", "TBM us"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
  const auto empty = build_scratch("maskbench_empty");
  EXPECT_NE(lemma("bench grammar --tokenizer " + shell_quote(tokenizer.string()) + " " + shell_quote(empty.string())).exit_code, 0);
  const auto bad_shard = lemma("bench grammar --tokenizer " + shell_quote(tokenizer.string()) + " " + shell_quote(dir.string()) + " --shard 4/4");
  EXPECT_NE(bad_shard.exit_code, 0);
  EXPECT_NE(bad_shard.err.find("--shard"), std::string::npos) << bad_shard.err;
}

}  // namespace
}  // namespace lemma::testing
