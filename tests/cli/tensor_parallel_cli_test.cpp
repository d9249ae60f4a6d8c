// `--tensor-parallel-size T` (G7) from outside, on stories260K: `lemma logits` prints the one-rank
// logits within the f32 tolerance at T=2 and T=4, `lemma generate` prints the same greedy text and
// ids, and shapes that do not divide are a clear error (exit 1) naming the dimension.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using json = nlohmann::json;

std::string stories() { return shared_data("models/stories260K/stories260K.gguf").string(); }

std::string lemma(const std::string& args) {
  return shell_quote(LEMMA_BINARY) + " " + args + " --model " + shell_quote(stories());
}

TEST(TensorParallelCli, LogitsEqualOneRank) {
  LEMMA_REQUIRE_SHARED(stories());
  const std::string ids = "1,403,407,261,378,432,383,286,261,376,298,315,421,395,317";
  const auto one = run_command(lemma("logits --ids " + ids));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const json want = json::parse(one.out);
  for (int tp : {2, 4}) {
    const auto r = run_command(lemma("logits --tensor-parallel-size " + std::to_string(tp) + " --ids " + ids));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json got = json::parse(r.out);
    ASSERT_EQ(got.size(), want.size());
    double worst = 0.0, largest = 0.0;
    for (size_t t = 0; t < want.size(); ++t)
      for (size_t v = 0; v < want[t].size(); ++v) {
        largest = std::max(largest, std::abs(want[t][v].get<double>()));
        worst = std::max(worst, std::abs(got[t][v].get<double>() - want[t][v].get<double>()));
      }
    EXPECT_LE(worst, 1e-4 * largest + 1e-5) << "TP=" << tp;
  }
}

TEST(TensorParallelCli, GreedyGenerateEqualsOneRank) {
  LEMMA_REQUIRE_SHARED(stories());
  const std::string args = "generate --json --temperature 0 --max-tokens 40 --threads 1 --prompt 'Once upon a time'";
  const auto one = run_command(lemma(args));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto two = run_command(lemma(args + " --tensor-parallel-size 2"));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const json a = json::parse(one.out), b = json::parse(two.out);
  EXPECT_EQ(a["ids"], b["ids"]);
  EXPECT_EQ(a["text"], b["text"]);
  EXPECT_EQ(a["ids"].size(), 40u);
}

TEST(TensorParallelCli, ShapesThatDoNotDivideAreAClearError) {
  LEMMA_REQUIRE_SHARED(stories());
  const auto r = run_command(lemma("logits --tensor-parallel-size 3 --ids 1,2,3"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("num_kv_heads 4 is not divisible by tensor-parallel size 3"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lemma::testing
