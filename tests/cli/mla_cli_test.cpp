// DeepSeek MLA (G28) and MTP (G30) through the real `lemma` binary: `inspect` reports the latent KV
// bytes per token beside the MHA equivalent; `logits --mtp` prints the golden teacher-forced MTP
// logits (row i predicts token i+2) and refuses a GGUF (which has no MTP module); `generate` with
// `--speculative-method mtp` and with either `--mla-attention` path gives the golden greedy tokens.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "golden_models.h"
#include "run_command.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

CommandResult lemma(const std::string& args) { return run_command(std::string(LEMMA_BINARY) + " " + args + " 2>&1"); }
CommandResult lemma_stdout(const std::string& args) {
  return run_command(std::string(LEMMA_BINARY) + " " + args + " 2>/dev/null");
}

std::string id_list(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

TEST(MlaCli, InspectReportsLatentKvBytes) {
  LEMMA_REQUIRE_PRESET(v2, "tiny-deepseek-v2");
  const auto r = lemma("inspect --model " + shell_quote(v2->gguf.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // 27 layers x (kv_lora 32 + rope 8) x 4 bytes; MHA: 2 x 27 x 4 heads x 24 x 4.
  EXPECT_NE(r.out.find("kv cache per token (f32): 4320 bytes latent (MLA: 1 x 40 per layer); as MHA: 20736 bytes (4.8x)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("mla kv_lora 32 (+rope 8), nope 16, v 16"), std::string::npos) << r.out;
}

TEST(MlaCli, LogitsMtpPrintsTheGoldenMtpLogits) {
  LEMMA_REQUIRE_SHARED(shared_data("golden/models/tiny-deepseek-v3.json"));
  LEMMA_REQUIRE_PRESET(v3, "tiny-deepseek-v3");
  const auto& golden = golden_json("models/tiny-deepseek-v3.json");
  const auto tokens = golden["sequences"][2]["tokens"].get<std::vector<int32_t>>();
  const auto r = lemma_stdout("logits --mtp --model " + shell_quote(v3->hf_dir.string()) + " --ids " + id_list(tokens));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), tokens.size() - 1);
  std::vector<float> flat;
  for (const auto& row : rows)
    for (const auto& v : row) flat.push_back(v.get<float>());
  const auto cmp = compare_logits(flat, 512, golden["mtp_logits"], golden["mtp"]["argmax"]);
  EXPECT_LE(cmp.max_abs_diff, cmp.tolerance());
  EXPECT_EQ(cmp.argmax_mismatches, 0);
  const auto gguf = lemma("logits --mtp --model " + shell_quote(v3->gguf.string()) + " --ids 1,2,3");
  EXPECT_NE(gguf.exit_code, 0);
  EXPECT_NE((gguf.out + gguf.err).find("GGUF conversions drop it"), std::string::npos) << gguf.out << gguf.err;
}

TEST(MlaCli, GenerateGreedyWithMtpAndBothAttentionPaths) {
  LEMMA_REQUIRE_SHARED(shared_data("golden/models/tiny-deepseek-v3.json"));
  LEMMA_REQUIRE_PRESET(v3, "tiny-deepseek-v3");
  const auto& greedy = golden_json("models/tiny-deepseek-v3.json")["greedy"];
  const auto want = greedy["tokens"].get<std::vector<int32_t>>();
  for (const std::string& flags : {std::string("--speculative-method mtp"), std::string("")})
    for (const std::string& path : {"absorbed", "materialised"}) {
      const auto r = lemma_stdout("--mla-attention " + path + " generate --model " + shell_quote(v3->hf_dir.string()) +
                                  " --prompt-ids " + id_list(greedy["prompt"].get<std::vector<int32_t>>()) +
                                  " --max-tokens 32 --temperature 0 --ignore-eos --json " + flags);
      ASSERT_EQ(r.exit_code, 0) << r.out;
      EXPECT_EQ(nlohmann::json::parse(r.out)["ids"].get<std::vector<int32_t>>(), want) << flags << " " << path;
    }
  const auto bad = lemma("--mla-attention sideways generate --model " + shell_quote(v3->hf_dir.string()) + " --prompt-ids 1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE((bad.out + bad.err).find("--mla-attention (LEMMA_MLA_ATTENTION) sideways is not one of auto, absorbed, materialised"),
            std::string::npos)
      << bad.out << bad.err;
}

}  // namespace
}  // namespace lemma::testing
