// LoRA adapters (G29) through the Engine on the tiny preset: requests on lora-a, lora-b, lora-c and
// the base model in the same steps give the golden greedy continuations; the prefix cache never
// hands one adapter's K/V to another (nor to the base model) while it does serve the same adapter;
// a request keeps its adapter's weights alive when every other holder drops it.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "golden_models.h"
#include "lemma/engine/engine.h"
#include "lemma/model/lora/lora_adapter.h"
#include "lemma/model/sequence_logits.h"
#include "lora_golden_files.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

const char* const kAdapters[] = {"lora-a", "lora-b", "lora-c"};

struct Result {
  std::vector<int32_t> tokens;
  std::vector<float> first_logits;
  int64_t cached_tokens = -1;
  RequestStatus status = RequestStatus::kRunning;
};

class LoraEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* a : kAdapters) LEMMA_REQUIRE_SHARED(shared_data(std::string("golden/lora/tiny-") + a + ".json"));
    std::string why;
    const auto files = ensure_lora_adapters("tiny", why);
    if (!files) {
      if (running_in_ci()) FAIL() << why;
      GTEST_SKIP() << why;
    }
    model_.emplace(Model::open(files->base.hf_dir));
    for (const char* a : kAdapters) {
      ASSERT_EQ(check_adapter_files(lora_golden("tiny", a), files->adapters), "");
      adapters_.push_back(std::make_shared<const LoraAdapter>(load_lora_adapter(files->adapters / a, model_->config())));
    }
  }

  EngineConfig config() const {
    EngineConfig c;
    c.scheduler.max_num_batched_tokens = 256;
    c.scheduler.max_num_seqs = 8;
    c.scheduler.max_model_len = 256;
    c.kv.num_device_blocks = 64;
    c.kv.block_size = 16;
    c.kv.watermark = 0.0;
    c.num_threads = 2;
    c.keep_logits = true;
    return c;
  }

  static RequestOptions greedy(int64_t max_tokens, std::shared_ptr<const LoraAdapter> lora) {
    RequestOptions o;
    o.sampling.temperature = 0.0f;
    o.stop.max_tokens = max_tokens;
    o.stop.ignore_eos = true;
    o.lora = std::move(lora);
    return o;
  }

  static std::map<RequestId, Result> run(Engine& engine) {
    std::map<RequestId, Result> out;
    for (int i = 0; i < 10000 && engine.has_unfinished_requests(); ++i)
      for (const auto& o : engine.step().outputs) {
        Result& r = out[o.output.id];
        if (r.tokens.empty() && !o.output.new_token_ids.empty()) {
          const auto l = engine.runner().last_logits(o.output.id);
          r.first_logits.assign(l.begin(), l.end());
        }
        r.tokens.insert(r.tokens.end(), o.output.new_token_ids.begin(), o.output.new_token_ids.end());
        if (o.output.finished()) {
          r.status = o.output.status;
          r.cached_tokens = o.output.num_cached_tokens;
        }
      }
    return out;
  }

  std::optional<Model> model_;
  std::vector<std::shared_ptr<const LoraAdapter>> adapters_;
};

TEST_F(LoraEngine, MixedAdaptersInOneEngineGiveGoldenGreedy) {
  Engine engine(*model_, config());
  const auto& base_greedy = golden_json("models/tiny.json")["greedy"];
  // Each adapter twice (ids 1..6) and the base model, all admitted together: every step mixes them.
  for (RequestId id = 0; id < 7; ++id) {
    const auto lora = id == 0 ? nullptr : adapters_[(id - 1) % 3];
    const auto& g = id == 0 ? base_greedy : lora_golden("tiny", kAdapters[(id - 1) % 3])["greedy"];
    engine.add_request(id, g["prompt"].get<std::vector<int32_t>>(), greedy(g["n_predict"].get<int64_t>(), lora));
  }
  const auto out = run(engine);
  for (RequestId id = 0; id < 7; ++id) {
    const auto& g = id == 0 ? base_greedy : lora_golden("tiny", kAdapters[(id - 1) % 3])["greedy"];
    EXPECT_EQ(out.at(id).tokens, g["tokens"].get<std::vector<int32_t>>()) << "request " << id;
    EXPECT_EQ(out.at(id).status, RequestStatus::kFinishedLength);
  }
}

// Four full blocks of one prompt computed on lora-a; then the same prompt on lora-b, on the base
// model and on lora-a again. Only the last may hit the cache, and each first token's logits are
// those of its adapter run alone (a hit across adapters would read lora-a's K/V and differ).
TEST_F(LoraEngine, PrefixCacheNeverCrossesAdapters) {
  Engine engine(*model_, config());
  const auto prompt = lora_golden("tiny", "lora-a")["sequences"][2]["tokens"].get<std::vector<int32_t>>();  // 64 tokens
  const std::vector<std::shared_ptr<const LoraAdapter>> order = {adapters_[0], adapters_[1], nullptr, adapters_[0],
                                                                 adapters_[2]};
  std::vector<Result> results;
  for (size_t i = 0; i < order.size(); ++i) {
    engine.add_request(static_cast<RequestId>(i), prompt, greedy(2, order[i]));
    results.push_back(run(engine).at(static_cast<RequestId>(i)));
  }
  EXPECT_EQ(results[1].cached_tokens, 0) << "lora-b reused lora-a's blocks";
  EXPECT_EQ(results[2].cached_tokens, 0) << "the base model reused lora-a's blocks";
  EXPECT_EQ(results[3].cached_tokens, 48) << "lora-a again should hit its own blocks (the cache must be on)";
  EXPECT_EQ(results[4].cached_tokens, 0) << "lora-c reused another adapter's blocks";
  const int64_t vocab = model_->config().vocab_size;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto alone = sequence_logits(*model_, prompt, 1, KvDtype::kF32, order[i].get());
    const std::vector<float> last(alone.end() - vocab, alone.end());
    ASSERT_EQ(results[i].first_logits.size(), last.size());
    for (int64_t v = 0; v < vocab; ++v)
      ASSERT_NEAR(results[i].first_logits[static_cast<size_t>(v)], last[static_cast<size_t>(v)], 1e-5) << "request " << i;
  }
}

// The request is the last holder of its adapter after a few steps (the pool "unloaded" it): it still
// runs to the golden continuation, and the weights go when it ends.
TEST_F(LoraEngine, RequestKeepsItsAdapterAliveAfterUnload) {
  Engine engine(*model_, config());
  const auto& g = lora_golden("tiny", "lora-b")["greedy"];
  std::weak_ptr<const LoraAdapter> watch = adapters_[1];
  engine.add_request(1, g["prompt"].get<std::vector<int32_t>>(), greedy(g["n_predict"].get<int64_t>(), adapters_[1]));
  std::vector<int32_t> tokens;
  for (int i = 0; i < 3; ++i)
    for (const auto& o : engine.step().outputs) tokens.insert(tokens.end(), o.output.new_token_ids.begin(), o.output.new_token_ids.end());
  adapters_[1].reset();
  EXPECT_FALSE(watch.expired());
  const auto rest = run(engine);
  tokens.insert(tokens.end(), rest.at(1).tokens.begin(), rest.at(1).tokens.end());
  EXPECT_EQ(tokens, g["tokens"].get<std::vector<int32_t>>());
  EXPECT_TRUE(watch.expired()) << "the engine kept the adapter after its request ended";
}

}  // namespace
}  // namespace lemma::testing
