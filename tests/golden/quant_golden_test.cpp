// Quantized GGUF files (golden/quant/): lemma dequantizes weights and multiplies in f32 (no
// activation quantization), so its logits are compared with the float64 dequantized-weights
// reference at the f32 tolerance, loosely with llama.cpp's own logits, and the stories260K
// perplexity with the float64 reference's value (golden/README.md, "Recommended test tolerances").
#include <gtest/gtest.h>

#include <cmath>

#include "golden_models.h"
#include "lemma/model/greedy_generate.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/model/perplexity.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

class QuantGolden : public ::testing::TestWithParam<std::string> {};

std::string name_of(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

TEST_P(QuantGolden, LogitsMatchDequantizedReference) {
  const auto gguf = shared_data("golden/quant/" + GetParam() + ".gguf");
  LEMMA_REQUIRE_SHARED(gguf);
  const Model model = Model::open(gguf);
  const auto& golden = golden_json("quant/" + GetParam() + ".json");
  const int64_t vocab = model.config().vocab_size;
  for (const auto& seq : golden["sequences"]) {
    const auto tokens = seq["tokens"].get<std::vector<int32_t>>();
    const std::vector<float> logits = sequence_logits(model, tokens);

    const auto& ref = seq["reference_dequant_f64_logits"];
    nlohmann::json ref_argmax = nlohmann::json::array();
    for (const auto& row : ref) {
      const auto v = row.get<std::vector<float>>();
      ref_argmax.push_back(argmax(v));
    }
    const auto exact = compare_logits(logits, vocab, ref, ref_argmax);
    EXPECT_LE(exact.max_abs_diff, exact.tolerance()) << seq["name"];
    EXPECT_EQ(exact.argmax_mismatches, 0) << seq["name"];
    const auto loose = compare_logits(logits, vocab, seq["logits"], seq["argmax"]);
    EXPECT_LE(loose.max_abs_diff, 0.15 * loose.max_abs_golden) << seq["name"] << " vs llama.cpp";
  }
}

INSTANTIATE_TEST_SUITE_P(Files, QuantGolden,
                         ::testing::Values("tiny-256-Q8_0", "tiny-256-Q4_0", "tiny-256-Q4_K", "tiny-256-Q5_K",
                                           "tiny-256-Q6_K", "tiny-256-Q4_K_M", "stories260K-Q8_0",
                                           "stories260K-Q4_0"),
                         name_of);

TEST(QuantGolden, Stories260KPerplexity) {
  for (const std::string name : {"stories260K-Q8_0", "stories260K-Q4_0"}) {
    const auto gguf = shared_data("golden/quant/" + name + ".gguf");
    LEMMA_REQUIRE_SHARED(gguf);
    const Model model = Model::open(gguf);
    const auto& golden = golden_json("quant/" + name + ".json")["perplexity"];
    const auto tokens = golden_json("stories260K_perplexity.json")["tokens"].get<std::vector<int32_t>>();
    PerplexityOptions options;
    options.context = 128;
    options.bos_token_id = model.config().bos_token_id;
    const double ppl = compute_perplexity(model, tokens, options).perplexity;
    EXPECT_NEAR(ppl, golden["ppl_numpy_dequant_f64"].get<double>(), 0.01) << name;
    EXPECT_NEAR(ppl, golden["llama_perplexity_f32kv"]["ppl"].get<double>(), 0.2) << name;
  }
}

}  // namespace
}  // namespace lemma::testing
