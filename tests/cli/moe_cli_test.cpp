// Mixture of experts (G27) through the real `lemma` binary: `inspect` shows the MoE shape,
// `quantize` writes MoE GGUFs (stacked experts quantized, router kept f32) that `generate` runs,
// and `serve` reports tokens per expert and the load imbalance in /metrics.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "golden_models.h"
#include "run_command.h"
#include "serve_process.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

namespace fs = std::filesystem;

CommandResult lemma(const std::string& args) { return run_command(std::string(LEMMA_BINARY) + " " + args + " 2>&1"); }

TEST(MoeCli, InspectShowsTheMoeShape) {
  LEMMA_REQUIRE_PRESET(qwen2, "tiny-qwen2-moe");
  for (const fs::path& model : {qwen2->gguf, qwen2->hf_dir}) {
    const auto r = lemma("inspect --model " + shell_quote(model.string()));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("moe 8 experts x 32 (top-2, softmax), shared 96 (sigmoid gate)"), std::string::npos) << r.out;
  }
  LEMMA_REQUIRE_PRESET(mixtral, "tiny-mixtral");
  const auto r = lemma("inspect --model " + shell_quote(mixtral->gguf.string()));
  EXPECT_NE(r.out.find("moe 4 experts x 128 (top-2, softmax, renormalised)"), std::string::npos) << r.out;
}

TEST(MoeCli, QuantizeWritesMoeFilesThatRun) {
  LEMMA_REQUIRE_PRESET(files, "tiny-qwen3-moe");
  const fs::path out = build_scratch("quant") / "cli-tiny-qwen3-moe-q8_0.gguf";
  const auto q = lemma("quantize --model " + shell_quote(files->gguf.string()) + " --out " + shell_quote(out.string()) +
                       " --type q8_0");
  ASSERT_EQ(q.exit_code, 0) << q.out;
  const auto inspect = lemma("inspect --model " + shell_quote(out.string()) + " --all-tensors");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.out;
  EXPECT_NE(inspect.out.find("moe 8 experts x 48"), std::string::npos) << inspect.out;
  // Gate/up experts quantized (rows of 64); down's rows of 48 are no whole Q8_0 blocks; the router stays f32.
  for (const std::string line : {"blk.0.ffn_gate_exps.weight                       q8_0",
                                 "blk.0.ffn_down_exps.weight                       f32",
                                 "blk.0.ffn_gate_inp.weight                        f32"})
    EXPECT_NE(inspect.out.find(line), std::string::npos) << line << "\n" << inspect.out;
  const auto generated = lemma("generate --model " + shell_quote(out.string()) + " --prompt hello -n 8 --temperature 0");
  EXPECT_EQ(generated.exit_code, 0) << generated.out;
}

double metric_value(const std::string& metrics, const std::string& name) {
  const size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return -1.0;
  return std::stod(metrics.substr(at + name.size() + 2));
}

TEST(MoeCli, ServeReportsExpertLoadInMetrics) {
  LEMMA_REQUIRE_PRESET(files, "tiny-mixtral");
  ServeProcess server("--model " + shell_quote(files->gguf.string()) + " --port 0 --threads 1 --max-num-seqs 4");
  ASSERT_TRUE(server.started()) << server.log();
  const nlohmann::json body = {{"prompt", "hello there"}, {"max_tokens", 6}, {"temperature", 0}, {"ignore_eos", true}};
  const JsonReply r = post_json(server.port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body.dump();
  const std::string metrics = raw_http(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  // A prefill step and decode steps: one imbalance per step, each of the 4 experts observed once per step.
  const double steps = metric_value(metrics, "lemma_moe_load_imbalance_count");
  EXPECT_GE(steps, 2.0) << metrics;
  EXPECT_EQ(metric_value(metrics, "lemma_moe_expert_tokens_count"), 4.0 * steps) << metrics;
  // top-2 of 4 experts: a step's busiest expert has at most 4 / 2 = 2x the mean, at least 1x.
  EXPECT_EQ(metric_value(metrics, "lemma_moe_load_imbalance_bucket{le=\"2\"}"), steps) << metrics;
  EXPECT_NE(metrics.find("# TYPE lemma_moe_expert_tokens histogram"), std::string::npos);
}

}  // namespace
}  // namespace lemma::testing
