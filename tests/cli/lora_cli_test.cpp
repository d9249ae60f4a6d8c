// `lemma logits --lora DIR` (G29) on the tiny preset against shared/data/golden/lora/ (merged-weights
// float64 reference), and a bad adapter directory exiting 1 with a message naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lora_golden_files.h"
#include "run_command.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

CommandResult lemma(const std::string& args) { return run_command(std::string(LEMMA_BINARY) + " " + args); }

std::string ids_of(const nlohmann::json& tokens) {
  std::string s;
  for (const auto& t : tokens) s += (s.empty() ? "" : ",") + std::to_string(t.get<int>());
  return s;
}

class LoraCli : public ::testing::Test {
 protected:
  void SetUp() override {
    LEMMA_REQUIRE_SHARED(shared_data("golden/lora/tiny-lora-c.json"));
    std::string why;
    files_ = ensure_lora_adapters("tiny", why);
    if (!files_) {
      if (running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
  }
  std::optional<LoraFiles> files_;
};

TEST_F(LoraCli, LogitsWithAdapterMatchGolden) {
  for (const bool gguf : {false, true}) {
    const auto& golden = lora_golden("tiny", "lora-c");
    ASSERT_EQ(check_adapter_files(golden, files_->adapters), "");
    const auto& seq = golden["sequences"][2];  // len64
    const auto model = gguf ? files_->base.gguf.string() : files_->base.hf_dir.string();
    const auto r = lemma("logits --model " + shell_quote(model) + " --ids " + ids_of(seq["tokens"]) + " --lora " +
                         shell_quote((files_->adapters / "lora-c").string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto logits = nlohmann::json::parse(r.out);
    std::vector<float> flat;
    for (const auto& row : logits)
      for (const auto& v : row) flat.push_back(v.get<float>());
    const auto cmp = compare_logits(flat, golden["n_vocab"].get<int64_t>(), seq["logits"], seq["argmax"]);
    EXPECT_LE(cmp.max_abs_diff, cmp.tolerance()) << (gguf ? "gguf" : "hf");
    EXPECT_EQ(cmp.argmax_mismatches, 0);
  }
}

TEST_F(LoraCli, MissingAdapterIsAClearError) {
  const auto r = lemma("logits --model " + shell_quote(files_->base.hf_dir.string()) + " --ids 1,2 --lora /nonexistent/adapter");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/adapter/adapter_config.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lemma::testing
