// Pooling requests through the real engine (EngineService on stories260K): the vector a pooling
// request returns is the pooled final hidden state of a direct Model::forward over its prompt (the
// final norm's output: its last row, or the mean of its rows), with prompts long enough to be
// chunked; a batch of concurrent requests returns what each returns alone.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "lemma/model/kv_cache.h"
#include "lemma/model/model.h"
#include "lemma/server/engine_service.h"
#include "support/shared_data.h"

namespace lemma::server::testing {
namespace {

class VectorSink final : public CompletionSink {
 public:
  void push(CompletionDelta d) override {
    std::lock_guard lock(mu_);
    if (!d.finish_reason) return;
    reason_ = *d.finish_reason;
    embedding_ = std::move(d.embedding);
    done_ = true;
    cv_.notify_all();
  }
  std::vector<float> wait() {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(60), [&] { return done_; }));
    EXPECT_EQ(reason_, RequestStatus::kFinishedLength);
    return embedding_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  RequestStatus reason_ = RequestStatus::kRunning;
  std::vector<float> embedding_;
};

const Model& stories() {
  static const Model model = Model::open(lemma::testing::shared_data("models/stories260K/stories260K.gguf"), LoadMode::kCopy);
  return model;
}

EngineServiceConfig service_config() {
  EngineServiceConfig c;
  c.engine.scheduler.max_num_seqs = 8;
  c.engine.scheduler.max_num_batched_tokens = 32;  // prompts of 40+ tokens are prefilled in chunks
  c.engine.scheduler.max_model_len = 256;
  c.engine.kv.num_device_blocks = 64;
  c.engine.kv.block_size = 16;
  return c;
}

std::vector<int32_t> prompt(int salt) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 7 + salt * 9; ++i) ids.push_back(1 + (salt * 37 + i * 11) % 500);
  return ids;
}

// The oracle: one forward over the whole prompt, its final hidden states pooled.
std::vector<float> direct_pooled(const std::vector<int32_t>& ids, Pooling pooling) {
  const Model& m = stories();
  KvCache cache = KvCache::for_model(m.config(), 16, 16);
  ForwardWorkspace ws(1);
  std::vector<int32_t> table;
  for (int32_t b = 0; b < 16; ++b) table.push_back(b);
  ForwardBatch batch;
  batch.sequences.push_back({ids, 0, table, LogitsRequest::kLast});
  std::vector<float> logits(static_cast<size_t>(m.config().vocab_size));
  m.forward(batch, cache, ws, logits);
  const auto hidden = static_cast<size_t>(m.config().hidden_size);
  std::vector<float> out(hidden);
  if (pooling == Pooling::kLast) {
    std::copy_n(ws.normed.data() + (ids.size() - 1) * hidden, hidden, out.data());
  } else {
    std::vector<double> sum(hidden, 0.0);
    for (size_t r = 0; r < ids.size(); ++r)
      for (size_t h = 0; h < hidden; ++h) sum[h] += ws.normed[r * hidden + h];
    for (size_t h = 0; h < hidden; ++h) out[h] = static_cast<float>(sum[h] / static_cast<double>(ids.size()));
  }
  return out;
}

std::vector<float> engine_pooled(EngineService& service, const std::string& id, const std::vector<int32_t>& ids, Pooling pooling) {
  CompletionRequest r;
  r.request_id = id;
  r.prompt_ids = ids;
  r.max_tokens = 1;
  r.pooling = pooling;
  auto sink = std::make_shared<VectorSink>();
  EXPECT_TRUE(service.submit(r, sink));
  return sink->wait();
}

class EmbeddingsEngineTest : public ::testing::TestWithParam<Pooling> {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(lemma::testing::shared_data("models/stories260K/stories260K.gguf")); }
};

TEST_P(EmbeddingsEngineTest, EqualsTheDirectForwardsPooledHiddenState) {
  EngineService service(stories(), service_config());
  for (int salt : {0, 2, 5}) {  // 7, 25 and 52 tokens: one chunk, one, two (32-token budget)
    const std::vector<int32_t> ids = prompt(salt);
    const std::vector<float> got = engine_pooled(service, "e" + std::to_string(salt), ids, GetParam());
    const std::vector<float> want = direct_pooled(ids, GetParam());
    ASSERT_EQ(got.size(), want.size());
    for (size_t h = 0; h < want.size(); ++h) EXPECT_NEAR(got[h], want[h], 1e-5f * (1.0f + std::abs(want[h]))) << "salt " << salt << " h " << h;
  }
}

TEST_P(EmbeddingsEngineTest, ABatchEqualsOneAtATime) {
  constexpr int kInputs = 6;
  std::vector<std::vector<float>> solo;
  {
    EngineService service(stories(), service_config());
    for (int i = 0; i < kInputs; ++i) solo.push_back(engine_pooled(service, "s" + std::to_string(i), prompt(i), GetParam()));
  }
  EngineService service(stories(), service_config());
  std::vector<std::shared_ptr<VectorSink>> sinks;
  for (int i = 0; i < kInputs; ++i) {  // all queued at once: they share steps
    CompletionRequest r;
    r.request_id = "b" + std::to_string(i);
    r.prompt_ids = prompt(i);
    r.max_tokens = 1;
    r.pooling = GetParam();
    sinks.push_back(std::make_shared<VectorSink>());
    ASSERT_TRUE(service.submit(r, sinks.back()));
  }
  for (int i = 0; i < kInputs; ++i) EXPECT_EQ(sinks[static_cast<size_t>(i)]->wait(), solo[static_cast<size_t>(i)]) << "input " << i;
}

INSTANTIATE_TEST_SUITE_P(Pooling, EmbeddingsEngineTest, ::testing::Values(Pooling::kLast, Pooling::kMean),
                         [](const auto& info) { return info.param == Pooling::kLast ? std::string("Last") : std::string("Mean"); });

}  // namespace
}  // namespace lemma::server::testing
