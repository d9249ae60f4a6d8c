// Multi-head attention (num_kv_heads == num_heads, a KV-head group of one) at the logits level: every
// make_bench_model.py preset is GQA or MQA, so tiny-mha is made beside the build by
// make_mha_reference.py and checked, from its GGUF and its HF copy, against the float64 forward of
// shared/tools/hf_numpy_forward.py within golden/README.md's f32 tolerance, in one forward and as a
// prefill followed by one-token decode steps over a scattered block table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "golden_models.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

struct Reference {
  std::vector<int32_t> tokens;
  std::vector<std::vector<double>> logits;  // [tokens, vocab]
};

// max |logit - reference| over all positions, within 1e-4 * max|reference| + 1e-5; argmax equal
// wherever the reference's top-1/top-2 margin exceeds that tolerance.
void expect_logits_match(const std::vector<float>& logits, const Reference& ref, int64_t vocab, const char* what) {
  ASSERT_EQ(logits.size(), ref.tokens.size() * static_cast<size_t>(vocab)) << what;
  double max_abs_ref = 0.0, max_abs_diff = 0.0;
  for (size_t t = 0; t < ref.logits.size(); ++t)
    for (int64_t v = 0; v < vocab; ++v) {
      const double want = ref.logits[t][static_cast<size_t>(v)];
      max_abs_ref = std::max(max_abs_ref, std::abs(want));
      max_abs_diff = std::max(max_abs_diff, std::abs(want - logits[t * static_cast<size_t>(vocab) + static_cast<size_t>(v)]));
    }
  const double tolerance = 1e-4 * max_abs_ref + 1e-5;
  EXPECT_LE(max_abs_diff, tolerance) << what << ": max |logit| " << max_abs_ref;
  int64_t checked = 0;
  for (size_t t = 0; t < ref.logits.size(); ++t) {
    const auto& row = ref.logits[t];
    std::vector<double> sorted = row;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    if (sorted[0] - sorted[1] <= tolerance) continue;
    const auto want = std::max_element(row.begin(), row.end()) - row.begin();
    const auto got_row = logits.begin() + static_cast<std::ptrdiff_t>(t * static_cast<size_t>(vocab));
    EXPECT_EQ(std::max_element(got_row, got_row + vocab) - got_row, want) << what << ": position " << t;
    ++checked;
  }
  EXPECT_GT(checked, static_cast<int64_t>(ref.logits.size()) / 2) << what << ": too few decisive positions";
}

// tiny-mha/{tiny-mha-f32.gguf, hf/, reference.json} under the build tree; nullopt with `why` when
// the generator cannot run.
std::optional<std::filesystem::path> ensure_tiny_mha(std::string& why) {
  const auto tools = shared_dir() / "tools";
  const auto script = std::filesystem::path(LEMMA_GOLDEN_SOURCE_DIR) / "make_mha_reference.py";
  for (const auto& need : {tools / "make_bench_model.py", tools / "hf_numpy_forward.py",
                           std::filesystem::path("/usr/bin/python3")})
    if (!std::filesystem::exists(need)) {
      why = "cannot make tiny-mha: missing " + need.string();
      return std::nullopt;
    }
  return generated_dir("tiny-mha", "/usr/bin/python3 '" + script.string() + "' '" + tools.string() +
                                       "' {OUT} > /dev/null 2>&1", why);
}

class MhaGolden : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    std::string why;
    const auto dir = ensure_tiny_mha(why);
    if (!dir) {
      if (running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
    const auto json = nlohmann::json::parse(read_file(*dir / "reference.json"));
    ref_.tokens = json["tokens"].get<std::vector<int32_t>>();
    ref_.logits = json["logits"].get<std::vector<std::vector<double>>>();
    model_.emplace(Model::open(GetParam() ? *dir / "tiny-mha-f32.gguf" : *dir / "hf"));
  }

  Reference ref_;
  std::optional<Model> model_;
};

TEST_P(MhaGolden, ConfigIsMultiHead) {
  const ModelConfig& c = model_->config();
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, c.num_heads);
  EXPECT_EQ(c.head_dim, 16);
}

TEST_P(MhaGolden, AllPositionLogits) {
  ASSERT_EQ(ref_.tokens.size(), 64u);
  const int64_t vocab = model_->config().vocab_size;
  expect_logits_match(sequence_logits(*model_, ref_.tokens), ref_, vocab, "one forward");
}

// 16-token prefill, then 48 one-token decode steps over a scattered block table.
TEST_P(MhaGolden, PrefillThenDecodeLogits) {
  const int64_t vocab = model_->config().vocab_size;
  constexpr int64_t kBlockSize = 8, kPrefill = 16;
  const auto& tokens = ref_.tokens;
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
  expect_logits_match(logits, ref_, vocab, "prefill + decode");
}

INSTANTIATE_TEST_SUITE_P(TinyMha, MhaGolden, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "gguf" : "hf"; });

}  // namespace
}  // namespace lemma::testing
