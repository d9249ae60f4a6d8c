// Multi-head latent attention (G28) on tiny-deepseek-v2 (no q_lora, 27 layers, YaRN mscale 0.707)
// and tiny-deepseek-v3 (q_lora), HF and GGUF: the absorbed path (W_UK folded into the query, W_UV after
// attention over the latent) and the materialised one (per-head K/V rebuilt from the latent) each
// match the float64 golden logits and greedy continuation, and each other; the cache is latent (no
// per-head K/V: layers x (kv_lora_rank + rope) values per token); the engine (scheduler, paged
// block pool, chunked prefill, mixed batches) gives the golden greedy continuation.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "golden_models.h"
#include "preset_case.h"
#include "lemma/base/error.h"
#include "lemma/bench/capacity.h"
#include "lemma/engine/engine.h"
#include "lemma/model/greedy_generate.h"
#include "lemma/model/model.h"
#include "lemma/model/mtp/mtp_module.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/spec/mtp_proposer.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

using Case = PresetCase;
constexpr auto case_name = preset_case_name;

// An engine over 32 blocks of 16 tokens, up to 4 sequences, `step_tokens` tokens per step, 2 threads.
EngineConfig small_engine(int64_t step_tokens) {
  EngineConfig config;
  config.scheduler.max_num_batched_tokens = step_tokens;
  config.scheduler.max_num_seqs = 4;
  config.scheduler.max_model_len = 256;
  config.kv.num_device_blocks = 32;
  config.kv.block_size = 16;
  config.kv.watermark = 0.0;
  config.num_threads = 2;
  return config;
}

class MlaGolden : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    LEMMA_REQUIRE_SHARED(shared_data("golden/models/" + GetParam().preset + ".json"));
    std::string why;
    files_ = ensure_preset(GetParam().preset, why);
    if (!files_) {
      if (running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
    golden_ = &golden_json("models/" + GetParam().preset + ".json");
  }

  Model open(MlaMode mode) const {
    RuntimeOptions runtime;
    runtime.mla_attention = mode;
    return Model::open(GetParam().gguf ? files_->gguf : files_->hf_dir, LoadMode::kLazyMmap, runtime);
  }

  std::optional<PresetFiles> files_;
  const nlohmann::json* golden_ = nullptr;
};

// The golden config as lemma reads it: MLA shapes, a latent cache of kv_lora_rank + rope per layer.
TEST_P(MlaGolden, ConfigAndLatentCache) {
  const Model model = open(MlaMode::kAuto);
  const ModelConfig& c = model.config();
  const auto& pc = (*golden_)["preset_config"];
  ASSERT_TRUE(c.mla.enabled());
  EXPECT_EQ(c.mla.kv_lora_rank, pc["kv_lora_rank"].get<int64_t>());
  EXPECT_EQ(c.mla.q_lora_rank, pc["q_lora_rank"].is_null() ? 0 : pc["q_lora_rank"].get<int64_t>());
  EXPECT_EQ(c.mla.qk_nope_head_dim, pc["qk_nope_head_dim"].get<int64_t>());
  EXPECT_EQ(c.mla.qk_rope_head_dim, pc["qk_rope_head_dim"].get<int64_t>());
  EXPECT_EQ(c.mla.v_head_dim, pc["v_head_dim"].get<int64_t>());
  EXPECT_EQ(c.moe.first_dense_layers, pc["first_k_dense_replace"].get<int64_t>());
  const int64_t latent = c.mla.kv_lora_rank + c.mla.qk_rope_head_dim;
  const KvCache cache = KvCache::for_model(c, 2, 16);
  EXPECT_TRUE(cache.latent());
  EXPECT_EQ(cache.num_kv_heads(), 1);
  EXPECT_EQ(cache.head_dim(), latent);
  EXPECT_EQ(cache.bytes_per_token(), static_cast<uint64_t>(c.num_layers * latent * 4));
  EXPECT_EQ(bench::kv_bytes_per_token(c, KvDtype::kF32), cache.bytes_per_token());
  EXPECT_EQ(bench::kv_cache_bytes(c, 2, 16, KvDtype::kF32), cache.bytes());
  // MHA of the same heads: K and V rows of max(nope + rope, v) per head and layer.
  EXPECT_EQ(bench::mha_equivalent_kv_bytes_per_token(c, KvDtype::kF32),
            static_cast<uint64_t>(2 * c.num_layers * c.num_heads * c.mla.qk_head_dim() * 4));
}

// Every golden sequence in one forward, absorbed and materialised.
TEST_P(MlaGolden, AllPositionLogitsBothPaths) {
  const Model absorbed = open(MlaMode::kAbsorbed), materialised = open(MlaMode::kMaterialised);
  const int64_t vocab = absorbed.config().vocab_size;
  for (const auto& seq : (*golden_)["sequences"]) {
    const auto tokens = seq["tokens"].get<std::vector<int32_t>>();
    const auto a = sequence_logits(absorbed, tokens), m = sequence_logits(materialised, tokens);
    for (const auto* logits : {&a, &m}) {
      const auto cmp = compare_logits(*logits, vocab, seq["logits"], seq["argmax"]);
      EXPECT_LE(cmp.max_abs_diff, cmp.tolerance()) << seq["name"] << (logits == &a ? " absorbed" : " materialised");
      EXPECT_EQ(cmp.argmax_mismatches, 0) << seq["name"] << (logits == &a ? " absorbed" : " materialised");
    }
    double diff = 0.0, max_abs = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::abs(a[i] - m[i])));
      max_abs = std::max(max_abs, static_cast<double>(std::abs(m[i])));
    }
    EXPECT_LE(diff, 1e-5 * max_abs + 1e-6) << seq["name"] << ": absorbed vs materialised";
  }
}

// len64 as a 16-token prefill then 48 one-token decode steps over a scattered block table, in each
// mode (kAuto absorbs both: 16 new tokens are below kMlaMaterialiseMinTokens).
TEST_P(MlaGolden, PrefillThenDecodeBothPaths) {
  const auto& seq = (*golden_)["sequences"][2];
  ASSERT_EQ(seq["name"], "len64");
  const auto tokens = seq["tokens"].get<std::vector<int32_t>>();
  for (const MlaMode mode : {MlaMode::kAbsorbed, MlaMode::kMaterialised, MlaMode::kAuto}) {
    const Model model = open(mode);
    const int64_t vocab = model.config().vocab_size;
    constexpr int64_t kBlockSize = 8, kPrefill = 16;
    KvCache cache = KvCache::for_model(model.config(), 10, kBlockSize, KvDtype::kF32);
    const std::vector<int32_t> table = {9, 0, 7, 2, 5, 4, 3, 6};
    ForwardWorkspace ws(2);
    std::vector<float> logits(tokens.size() * static_cast<size_t>(vocab));
    ForwardBatch prefill;
    prefill.sequences.push_back({std::span(tokens).first(kPrefill), 0, table, LogitsRequest::kAll});
    model.forward(prefill, cache, ws, logits);
    for (size_t p = kPrefill; p < tokens.size(); ++p) {
      ForwardBatch step;
      step.sequences.push_back({std::span(tokens).subspan(p, 1), static_cast<int64_t>(p), table, LogitsRequest::kLast});
      model.forward(step, cache, ws, std::span(logits).subspan(p * static_cast<size_t>(vocab)));
    }
    const auto cmp = compare_logits(logits, vocab, seq["logits"], seq["argmax"]);
    EXPECT_LE(cmp.max_abs_diff, cmp.tolerance()) << static_cast<int>(mode);
    EXPECT_EQ(cmp.argmax_mismatches, 0) << static_cast<int>(mode);
  }
}

TEST_P(MlaGolden, GreedyContinuationBothPaths) {
  const auto& greedy = (*golden_)["greedy"];
  const auto prompt = greedy["prompt"].get<std::vector<int32_t>>();
  const auto want = greedy["tokens"].get<std::vector<int32_t>>();
  for (const MlaMode mode : {MlaMode::kAbsorbed, MlaMode::kMaterialised})
    EXPECT_EQ(generate_greedy(open(mode), prompt, greedy["n_predict"].get<int64_t>()), want) << static_cast<int>(mode);
}

// Through the engine: the golden greedy prompt and the len200 sequence's first 100 tokens (chunked
// prefill of 32-token chunks, so steps mix prefill and decode) as requests in one engine.
TEST_P(MlaGolden, EngineGreedy) {
  const Model model = open(MlaMode::kAuto);
  Engine engine(model, small_engine(32));
  const auto& greedy = (*golden_)["greedy"];
  RequestOptions options;
  options.sampling.temperature = 0.0f;
  options.stop.max_tokens = greedy["n_predict"].get<int64_t>();
  options.stop.ignore_eos = true;
  engine.add_request(1, greedy["prompt"].get<std::vector<int32_t>>(), options);
  auto long_prompt = (*golden_)["sequences"][3]["tokens"].get<std::vector<int32_t>>();
  long_prompt.resize(100);
  RequestOptions two = options;
  two.stop.max_tokens = 2;
  engine.add_request(2, long_prompt, two);
  std::map<RequestId, std::vector<int32_t>> out;
  for (int i = 0; i < 1000 && engine.has_unfinished_requests(); ++i)
    for (const auto& o : engine.step().outputs)
      out[o.output.id].insert(out[o.output.id].end(), o.output.new_token_ids.begin(), o.output.new_token_ids.end());
  EXPECT_EQ(out[1], greedy["tokens"].get<std::vector<int32_t>>());
  // Request 2's first token is the golden argmax at position 99 of len200.
  ASSERT_EQ(out[2].size(), 2u);
  EXPECT_EQ(out[2][0], (*golden_)["sequences"][3]["argmax"][99].get<int32_t>());
}

// DeepSeek-V3's MTP module (G30), teacher-forced over len64: row i predicts token i+2 (golden
// mtp_logits, numpy float64), within the README's tolerance and with every argmax equal.
TEST(MtpGolden, TeacherForcedLogits) {
  LEMMA_REQUIRE_SHARED(shared_data("golden/models/tiny-deepseek-v3.json"));
  LEMMA_REQUIRE_PRESET(files, "tiny-deepseek-v3");
  const auto& golden = golden_json("models/tiny-deepseek-v3.json");
  ASSERT_EQ(golden["mtp"]["sequence"], "len64");
  const auto tokens = golden["sequences"][2]["tokens"].get<std::vector<int32_t>>();
  const Model main = Model::open(files->hf_dir);
  ASSERT_EQ(main.config().num_nextn_predict_layers, 1);
  const MtpModule mtp = MtpModule::open(files->hf_dir);
  EXPECT_EQ(mtp.block().config().num_layers, 1);
  EXPECT_TRUE(mtp.block().config().moe.is_moe_layer(0));
  const auto logits = mtp_sequence_logits(main, mtp, tokens, 2);
  ASSERT_EQ(logits.size(), 63u * 512u);
  const auto cmp = compare_logits(logits, 512, golden["mtp_logits"], golden["mtp"]["argmax"]);
  EXPECT_LE(cmp.max_abs_diff, cmp.tolerance()) << "max |logit| " << cmp.max_abs_golden;
  EXPECT_EQ(cmp.argmax_mismatches, 0);
  // The GGUF copy has no MTP module: a clear error, not a silent main-model head.
  EXPECT_THROW(MtpModule::open(files->gguf), Unsupported);
}

// --speculative-method mtp through the engine (G30): the MTP module drafts one token per step, the
// engine's verifier keeps it only where the target agrees, so greedy output is plain greedy's, for
// the golden prompt and for a longer one; drafts were proposed (the acceptance is printed: it is
// a figure of this random tiny model, not a property).
TEST(MtpGolden, SpeculativeGreedyEqualsPlainGreedy) {
  LEMMA_REQUIRE_SHARED(shared_data("golden/models/tiny-deepseek-v3.json"));
  LEMMA_REQUIRE_PRESET(files, "tiny-deepseek-v3");
  const auto& golden = golden_json("models/tiny-deepseek-v3.json");
  const Model model = Model::open(files->hf_dir);
  const auto run = [&](bool mtp, std::vector<int32_t> prompt, int64_t n, SchedulerStats* stats) {
    EngineConfig config = small_engine(64);
    if (mtp) {
      config.speculative.method = spec::SpeculativeMethod::kMtp;
      config.speculative.num_tokens = 1;
      config.speculative.mtp_module = std::make_shared<const MtpModule>(MtpModule::open(files->hf_dir));
    }
    Engine engine(model, config);
    RequestOptions options;
    options.sampling.temperature = 0.0f;
    options.stop.max_tokens = n;
    options.stop.ignore_eos = true;
    engine.add_request(1, std::move(prompt), options);
    std::vector<int32_t> out;
    for (int i = 0; i < 1000 && engine.has_unfinished_requests(); ++i)
      for (const auto& o : engine.step().outputs)
        out.insert(out.end(), o.output.new_token_ids.begin(), o.output.new_token_ids.end());
    if (stats) *stats = engine.scheduler().stats();
    return out;
  };
  const auto& greedy = golden["greedy"];
  SchedulerStats stats;
  EXPECT_EQ(run(true, greedy["prompt"].get<std::vector<int32_t>>(), 32, &stats), greedy["tokens"].get<std::vector<int32_t>>());
  EXPECT_GT(stats.num_draft_tokens, 0u);
  std::printf("mtp acceptance (golden prompt, 32 tokens): %llu of %llu drafts\n",
              static_cast<unsigned long long>(stats.num_accepted_draft_tokens),
              static_cast<unsigned long long>(stats.num_draft_tokens));
  auto prompt = golden["sequences"][3]["tokens"].get<std::vector<int32_t>>();
  prompt.resize(40);
  EXPECT_EQ(run(true, prompt, 48, &stats), run(false, prompt, 48, nullptr));
  std::printf("mtp acceptance (40-token prompt, 48 tokens): %llu of %llu drafts\n",
              static_cast<unsigned long long>(stats.num_accepted_draft_tokens),
              static_cast<unsigned long long>(stats.num_draft_tokens));
}

// The proposer's drafts are the MTP module's own predictions while it follows a decoding request:
// fed the len64 sequence's prefixes one accepted token at a time (and once a jump of 5), its draft for
// tokens t_0..t_n is the argmax of the teacher-forced MTP row n-1 (which predicts t_{n+1}).
TEST(MtpGolden, ProposerDraftsAreTheModulesPredictions) {
  LEMMA_REQUIRE_SHARED(shared_data("golden/models/tiny-deepseek-v3.json"));
  LEMMA_REQUIRE_PRESET(files, "tiny-deepseek-v3");
  const auto& golden = golden_json("models/tiny-deepseek-v3.json");
  const auto tokens = golden["sequences"][2]["tokens"].get<std::vector<int32_t>>();
  const Model model = Model::open(files->hf_dir);
  const auto mtp = std::make_shared<const MtpModule>(MtpModule::open(files->hf_dir));
  const auto want = golden["mtp"]["argmax"].get<std::vector<int32_t>>();
  spec::DraftModelConfig config;
  config.num_blocks = 8;
  config.block_size = 16;
  spec::MtpProposer proposer(model, mtp, config);
  const SamplingParams sampling;
  int checked = 0;
  for (size_t len = 2; len <= tokens.size(); len += len == 20 ? 5 : 1) {
    const DraftQuery q{7, std::span(tokens).first(len), 1, 1, &sampling};
    std::vector<Drafts> out;
    proposer.propose(std::span(&q, 1), out);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].tokens.size(), 1u) << len;
    EXPECT_EQ(out[0].tokens[0], want[len - 2]) << "tokens 0.." << len - 1;
    ++checked;
  }
  EXPECT_GT(checked, 50);
  proposer.forget(7);
  EXPECT_EQ(proposer.num_tracked(), 0u);
  EXPECT_EQ(proposer.num_free_blocks(), 8);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* p : {"tiny-deepseek-v2", "tiny-deepseek-v3"})
    for (bool gguf : {true, false}) cases.push_back({p, gguf});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Presets, MlaGolden, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace lemma::testing
