// LoRA adapters (G29) against the merged-weights float64 reference of shared/data/golden/lora/:
// each adapter of tiny and tiny-qwen3, from the HF and the GGUF base, all-position logits within
// golden/README.md's tolerance (argmax equal everywhere) and the greedy continuation exactly; then
// one forward mixing lora-a, lora-b, lora-c and the base model, whose rows equal each run alone
// bit for bit and the goldens within tolerance, also over a prefill followed by mixed decode steps.
#include <gtest/gtest.h>

#include "golden_models.h"
#include "lemma/model/greedy_generate.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "lora_golden_files.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

const char* const kAdapters[] = {"lora-a", "lora-b", "lora-c"};

struct Case {
  std::string preset;
  bool gguf;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.preset + (info.param.gguf ? "_gguf" : "_hf");
  for (char& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

class LoraGolden : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    for (const char* a : kAdapters) LEMMA_REQUIRE_SHARED(shared_data("golden/lora/" + GetParam().preset + "-" + a + ".json"));
    std::string why;
    const auto files = ensure_lora_adapters(GetParam().preset, why);
    if (!files) {
      if (running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
    model_.emplace(Model::open(GetParam().gguf ? files->base.gguf : files->base.hf_dir));
    for (const char* a : kAdapters) {
      const auto& golden = lora_golden(GetParam().preset, a);
      const std::string bad = check_adapter_files(golden, files->adapters);
      ASSERT_TRUE(bad.empty()) << bad;
      adapters_.push_back(load_lora_adapter(files->adapters / a, model_->config()));
      goldens_.push_back(&golden);
    }
  }

  std::optional<Model> model_;
  std::vector<LoraAdapter> adapters_;
  std::vector<const nlohmann::json*> goldens_;
};

TEST_P(LoraGolden, AllPositionLogitsAndGreedy) {
  const int64_t vocab = model_->config().vocab_size;
  for (size_t i = 0; i < adapters_.size(); ++i) {
    const auto& golden = *goldens_[i];
    EXPECT_DOUBLE_EQ(adapters_[i].scaling(adapters_[i].rank), golden["adapter"]["scaling"].get<double>());
    for (const auto& seq : golden["sequences"]) {
      const auto tokens = seq["tokens"].get<std::vector<int32_t>>();
      const auto logits = sequence_logits(*model_, tokens, 2, KvDtype::kF32, &adapters_[i]);
      const auto cmp = compare_logits(logits, vocab, seq["logits"], seq["argmax"]);
      EXPECT_LE(cmp.max_abs_diff, cmp.tolerance()) << kAdapters[i] << " " << seq["name"];
      EXPECT_EQ(cmp.argmax_mismatches, 0) << kAdapters[i] << " " << seq["name"];
      // The adapter matters far beyond the tolerance, so the check above could not pass without it.
      EXPECT_GT(seq["adapter_effect_max_abs_diff"].get<double>(), 100 * cmp.tolerance());
    }
    const auto& greedy = golden["greedy"];
    const auto prompt = greedy["prompt"].get<std::vector<int32_t>>();
    EXPECT_EQ(generate_greedy(*model_, prompt, greedy["n_predict"].get<int64_t>(), std::nullopt, 1, &adapters_[i]),
              greedy["tokens"].get<std::vector<int32_t>>())
        << kAdapters[i];
  }
}

// One forward over lora-a, base, lora-b, lora-c, lora-a again (two segments of one adapter) and
// lora-c twice in a row (one segment of two sequences), different prompts and lengths.
TEST_P(LoraGolden, MixedAdapterBatchEqualsEachAlone) {
  const int64_t vocab = model_->config().vocab_size;
  const auto& base_golden = golden_json("models/" + GetParam().preset + ".json");
  const auto& seqs = (*goldens_[0])["sequences"];
  const std::vector<int32_t> len64 = seqs[2]["tokens"].get<std::vector<int32_t>>();
  const std::vector<int32_t> len200 = seqs[3]["tokens"].get<std::vector<int32_t>>();
  const std::vector<int32_t> len7 = seqs[1]["tokens"].get<std::vector<int32_t>>();
  struct Row {
    const LoraAdapter* lora;
    const std::vector<int32_t>* tokens;
    const nlohmann::json* golden_seq;
  };
  const auto golden_of = [&](const nlohmann::json& g, int index) { return &g["sequences"][index]; };
  const std::vector<Row> rows = {
      {&adapters_[0], &len64, golden_of(*goldens_[0], 2)}, {nullptr, &len200, golden_of(base_golden, 3)},
      {&adapters_[1], &len64, golden_of(*goldens_[1], 2)}, {&adapters_[2], &len7, golden_of(*goldens_[2], 1)},
      {&adapters_[2], &len200, golden_of(*goldens_[2], 3)}, {&adapters_[0], &len7, golden_of(*goldens_[0], 1)}};

  constexpr int64_t kBlockSize = 16;
  std::vector<std::vector<int32_t>> tables;
  int32_t next_block = 0;
  for (const Row& r : rows) {
    auto& t = tables.emplace_back();
    for (int64_t b = 0; b < (static_cast<int64_t>(r.tokens->size()) + kBlockSize - 1) / kBlockSize; ++b) t.push_back(next_block++);
  }
  KvCache cache = KvCache::for_model(model_->config(), next_block, kBlockSize);
  ForwardWorkspace ws(2);
  ForwardBatch batch;
  for (size_t i = 0; i < rows.size(); ++i)
    batch.sequences.push_back({*rows[i].tokens, 0, tables[i], LogitsRequest::kAll, {}, {}, rows[i].lora});
  std::vector<float> logits(static_cast<size_t>(batch.num_logit_rows() * vocab));
  model_->forward(batch, cache, ws, logits);

  size_t offset = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t n = rows[i].tokens->size() * static_cast<size_t>(vocab);
    const std::vector<float> mixed(logits.begin() + static_cast<std::ptrdiff_t>(offset),
                                   logits.begin() + static_cast<std::ptrdiff_t>(offset + n));
    offset += n;
    EXPECT_EQ(mixed, sequence_logits(*model_, *rows[i].tokens, 2, KvDtype::kF32, rows[i].lora)) << "row " << i;
    const auto cmp = compare_logits(mixed, vocab, (*rows[i].golden_seq)["logits"], (*rows[i].golden_seq)["argmax"]);
    EXPECT_LE(cmp.max_abs_diff, cmp.tolerance()) << "row " << i;
    EXPECT_EQ(cmp.argmax_mismatches, 0) << "row " << i;
  }
}

// len64 of each adapter and the base: a 16-token prefill of all four in one forward, then 48
// steps that each decode one token of every sequence, adapters mixed in every step.
TEST_P(LoraGolden, MixedPrefillThenDecode) {
  const int64_t vocab = model_->config().vocab_size;
  const auto& base_golden = golden_json("models/" + GetParam().preset + ".json");
  const std::vector<int32_t> tokens = (*goldens_[0])["sequences"][2]["tokens"].get<std::vector<int32_t>>();
  const std::vector<const LoraAdapter*> loras = {&adapters_[2], nullptr, &adapters_[0], &adapters_[1]};
  const std::vector<const nlohmann::json*> golden = {&(*goldens_[2])["sequences"][2], &base_golden["sequences"][2],
                                                     &(*goldens_[0])["sequences"][2], &(*goldens_[1])["sequences"][2]};
  constexpr int64_t kBlockSize = 8, kPrefill = 16;
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t blocks = n / kBlockSize;
  KvCache cache = KvCache::for_model(model_->config(), blocks * 4, kBlockSize);
  std::vector<std::vector<int32_t>> tables(4);
  for (int64_t b = 0; b < blocks; ++b)
    for (size_t s = 0; s < 4; ++s) tables[s].push_back(static_cast<int32_t>(b * 4 + static_cast<int64_t>(s)));  // interleaved
  ForwardWorkspace ws(2);
  std::vector<std::vector<float>> got(4);
  ForwardBatch batch;
  std::vector<float> logits;
  for (int64_t pos = 0; pos < n;) {
    const int64_t count = pos == 0 ? kPrefill : 1;
    batch.sequences.clear();
    for (size_t s = 0; s < 4; ++s)
      batch.sequences.push_back({std::span(tokens).subspan(static_cast<size_t>(pos), static_cast<size_t>(count)), pos,
                                 tables[s], LogitsRequest::kAll, {}, {}, loras[s]});
    logits.assign(static_cast<size_t>(batch.num_logit_rows() * vocab), 0.0f);
    model_->forward(batch, cache, ws, logits);
    for (size_t s = 0; s < 4; ++s)
      got[s].insert(got[s].end(), logits.begin() + static_cast<std::ptrdiff_t>(s * static_cast<size_t>(count * vocab)),
                    logits.begin() + static_cast<std::ptrdiff_t>((s + 1) * static_cast<size_t>(count * vocab)));
    pos += count;
  }
  for (size_t s = 0; s < 4; ++s) {
    const auto cmp = compare_logits(got[s], vocab, (*golden[s])["logits"], (*golden[s])["argmax"]);
    EXPECT_LE(cmp.max_abs_diff, cmp.tolerance()) << "sequence " << s;
    EXPECT_EQ(cmp.argmax_mismatches, 0) << "sequence " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, LoraGolden,
                         ::testing::Values(Case{"tiny", false}, Case{"tiny", true}, Case{"tiny-qwen3", false},
                                           Case{"tiny-qwen3", true}),
                         case_name);

}  // namespace
}  // namespace lemma::testing
