// Every tiny-* preset, from both its GGUF and its HF copy: all-position logits of the four golden
// sequences within golden/README.md's f32 tolerance with argmax equal everywhere, and the 32-token
// greedy continuation exactly (llama.cpp b4748 / 2026-07 as the reference; the float64 numpy forward
// for tiny-mistral, whose sliding window of 16 bites on len64/len200 and in the greedy decode; the
// MoE presets tiny-mixtral / tiny-qwen2-moe (b4748) and tiny-qwen3-moe (numpy), G27; the DeepSeek
// MLA + MoE presets tiny-deepseek-v2 / -v3 (numpy), G28).
#include <gtest/gtest.h>

#include "golden_models.h"
#include "preset_case.h"
#include "lemma/io/gguf.h"
#include "lemma/model/config_from_hf.h"
#include "lemma/model/greedy_generate.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using Case = PresetCase;
constexpr auto case_name = preset_case_name;

class ModelGolden : public ::testing::TestWithParam<Case> {
 protected:
  // Loads the golden JSON and the model; skips (fails under CI) when data or generator are missing.
  void SetUp() override {
    const auto json_path = shared_data("golden/models/" + GetParam().preset + ".json");
    LEMMA_REQUIRE_SHARED(json_path);
    std::string why;
    const auto files = ensure_preset(GetParam().preset, why);
    if (!files) {
      if (running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
    golden_ = &golden_json("models/" + GetParam().preset + ".json");
    const auto& want = (*golden_)["files"][GetParam().gguf ? "gguf" : "safetensors"]["sha256"];
    const auto path = GetParam().gguf ? files->gguf : files->hf_dir / "model.safetensors";
    if (const auto sha = sha256_of(path)) {
      ASSERT_EQ(*sha, want.get<std::string>()) << path;
    } else if (running_in_ci()) {
      FAIL() << "sha256sum is unavailable to check " << path;
    }
    model_.emplace(Model::open(GetParam().gguf ? files->gguf : files->hf_dir));
  }

  const nlohmann::json* golden_ = nullptr;
  std::optional<Model> model_;
};

TEST_P(ModelGolden, AllPositionLogits) {
  const int64_t vocab = model_->config().vocab_size;
  ASSERT_EQ(vocab, (*golden_)["n_vocab"].get<int64_t>());
  for (const auto& seq : (*golden_)["sequences"]) {
    const auto tokens = seq["tokens"].get<std::vector<int32_t>>();
    const std::vector<float> logits = sequence_logits(*model_, tokens);
    const auto cmp = compare_logits(logits, vocab, seq["logits"], seq["argmax"]);
    EXPECT_LE(cmp.max_abs_diff, cmp.tolerance()) << seq["name"] << ": max |logit| " << cmp.max_abs_golden;
    EXPECT_EQ(cmp.argmax_mismatches, 0) << seq["name"];
  }
}

// The len64 sequence as a 16-token prefill followed by 48 one-token decode steps over a scattered
// block table: the same logits as the golden single forward (G8, G22).
TEST_P(ModelGolden, PrefillThenDecodeLogits) {
  const int64_t vocab = model_->config().vocab_size;
  const auto& seq = (*golden_)["sequences"][2];
  ASSERT_EQ(seq["name"], "len64");
  const auto tokens = seq["tokens"].get<std::vector<int32_t>>();
  constexpr int64_t kBlockSize = 8, kPrefill = 16;
  KvCache cache = KvCache::for_model(model_->config(), 10, kBlockSize);
  const std::vector<int32_t> table = {9, 0, 7, 2, 5, 4, 3, 6};
  ForwardWorkspace ws;
  std::vector<float> logits(tokens.size() * static_cast<size_t>(vocab));
  ForwardBatch prefill;
  prefill.sequences.push_back({std::span(tokens).first(kPrefill), 0, table, LogitsRequest::kAll});
  model_->forward(prefill, cache, ws, logits);
  for (size_t p = kPrefill; p < tokens.size(); ++p) {
    ForwardBatch step;
    step.sequences.push_back({std::span(tokens).subspan(p, 1), static_cast<int64_t>(p), table, LogitsRequest::kLast});
    model_->forward(step, cache, ws, std::span(logits).subspan(p * static_cast<size_t>(vocab)));
  }
  const auto cmp = compare_logits(logits, vocab, seq["logits"], seq["argmax"]);
  EXPECT_LE(cmp.max_abs_diff, cmp.tolerance());
  EXPECT_EQ(cmp.argmax_mismatches, 0);
}

TEST_P(ModelGolden, GreedyContinuation) {
  const auto& greedy = (*golden_)["greedy"];
  const auto prompt = greedy["prompt"].get<std::vector<int32_t>>();
  const auto want = greedy["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(generate_greedy(*model_, prompt, greedy["n_predict"].get<int64_t>()), want);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* p : {"tiny", "tiny-gqa", "tiny-mqa", "tiny-qwen2", "tiny-qwen3", "tiny-rope-linear", "tiny-rope-yarn",
                        "tiny-rope-llama3", "tiny-tied", "tiny-mistral", "tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe",
                        "tiny-deepseek-v2", "tiny-deepseek-v3"})
    for (bool gguf : {true, false}) cases.push_back({p, gguf});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Presets, ModelGolden, ::testing::ValuesIn(all_cases()), case_name);

// tiny-mistral's window reaches the model from both files: config.json "sliding_window" (arch
// mistral) and the GGUF's llama.attention.sliding_window (arch llama, which has no window of its
// own), on every layer. The golden says the window changes the len64/len200 logits by far more than
// the tolerance, so ModelGolden's tiny_mistral cases pass only with the window applied.
TEST(MistralSlidingWindow, ReadFromHfConfigAndGguf) {
  const auto json_path = shared_data("golden/models/tiny-mistral.json");
  LEMMA_REQUIRE_SHARED(json_path);
  std::string why;
  const auto files = ensure_preset("tiny-mistral", why);
  if (!files) {
    if (running_in_ci()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  const auto& golden = golden_json("models/tiny-mistral.json");
  const int64_t window = golden["sliding_window"]["window"].get<int64_t>();
  ASSERT_EQ(window, 16);

  const auto hf_json = nlohmann::json::parse(read_file(files->hf_dir / "config.json"));
  EXPECT_EQ(hf_json.at("sliding_window").get<int64_t>(), window);
  const GgufFile gguf = GgufFile::open(files->gguf.string());
  EXPECT_EQ(gguf.get_string("general.architecture"), "llama");
  EXPECT_EQ(gguf.get_int("llama.attention.sliding_window"), window);

  const ModelConfig from_hf = config_from_hf_file(files->hf_dir / "config.json");
  EXPECT_EQ(from_hf.arch, "mistral");
  const Model from_gguf = Model::open(files->gguf);
  EXPECT_EQ(from_gguf.config().arch, "llama");
  for (const ModelConfig* c : {&from_hf, &from_gguf.config()}) {
    ASSERT_EQ(c->num_layers, 2);
    EXPECT_EQ(c->sliding_window, std::vector<int64_t>(2, window)) << c->arch;
    for (int64_t l = 0; l < c->num_layers; ++l) EXPECT_EQ(c->layer_sliding_window(l), window) << c->arch;
  }
  EXPECT_EQ(Model::open(files->hf_dir).config().sliding_window, std::vector<int64_t>(2, window));

  for (const auto& seq : golden["sequences"]) {
    const auto& effect = seq["sliding_window_effect"];
    if (seq["tokens"].size() <= static_cast<size_t>(window)) continue;
    // The stored logits against full causal attention and against a window of 17.
    EXPECT_GT(effect["max_abs_diff_vs_full_attention"].get<double>(), 1.0) << seq["name"];
    EXPECT_GT(effect["max_abs_diff_vs_window_plus_1"].get<double>(), 1.0) << seq["name"];
  }
}

}  // namespace
}  // namespace lemma::testing
