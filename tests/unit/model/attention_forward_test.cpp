// Batch invariance of the whole forward with flash attention: a sequence's logits are the same
// bits whether its prompt runs alone in one step, or in chunks and token by token inside batches
// with other sequences, over contexts that cross the attention's 256-key splits.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "lemma/kernels/isa.h"
#include "random_model.h"

namespace lemma::testing {
namespace {

constexpr int64_t kBlockSize = 16;

std::vector<int32_t> random_tokens(int64_t n, uint32_t seed, int64_t vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return t;
}

// Block ids [first, first + count).
std::vector<int32_t> blocks(int32_t first, int64_t count) {
  std::vector<int32_t> t(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) t[static_cast<size_t>(i)] = first + static_cast<int32_t>(i);
  return t;
}

TEST(AttentionForward, LogitsAreBitwiseIndependentOfBatchAndChunking) {
  ModelConfig c = small_config();
  c.num_heads = 8;  // GQA groups of 4
  c.num_kv_heads = 2;
  const Model model = make_random_model(c, 31).build();
  const size_t V = static_cast<size_t>(c.vocab_size);
  const int64_t n = 300;
  const auto a = random_tokens(n, 1, c.vocab_size), b = random_tokens(330, 2, c.vocab_size);
  const int64_t a_blocks = (n + kBlockSize - 1) / kBlockSize, b_blocks = (330 + kBlockSize - 1) / kBlockSize;

  // A alone: the whole prompt in one step.
  std::vector<float> alone(static_cast<size_t>(n) * V);
  {
    KvCache cache = KvCache::for_model(c, a_blocks, kBlockSize);
    ForwardWorkspace ws;
    const auto table = blocks(0, a_blocks);
    ForwardBatch batch;
    batch.sequences.push_back({a, 0, table, LogitsRequest::kAll});
    model.forward(batch, cache, ws, alone);
  }

  // A in chunks of 100 and 150, then token by token, always batched with B (its own blocks,
  // prefill then decode), on two threads.
  KvCache cache = KvCache::for_model(c, a_blocks + b_blocks, kBlockSize);
  ForwardWorkspace ws(2);
  const auto table_a = blocks(static_cast<int32_t>(b_blocks), a_blocks), table_b = blocks(0, b_blocks);
  int64_t done_a = 0, done_b = 0;
  std::vector<float> logits;
  std::vector<int64_t> chunks = {100, 150};
  chunks.resize(chunks.size() + 50, 1);
  for (int64_t chunk : chunks) {
    const int64_t b_chunk = done_b == 0 ? 270 : 1;
    ForwardBatch batch;
    batch.sequences.push_back({std::span(b).subspan(static_cast<size_t>(done_b), static_cast<size_t>(b_chunk)), done_b,
                               table_b, LogitsRequest::kLast});
    batch.sequences.push_back({std::span(a).subspan(static_cast<size_t>(done_a), static_cast<size_t>(chunk)), done_a,
                               table_a, LogitsRequest::kAll});
    logits.assign(static_cast<size_t>(1 + chunk) * V, 0.0f);
    model.forward(batch, cache, ws, logits);
    ASSERT_EQ(0, std::memcmp(logits.data() + V, alone.data() + static_cast<size_t>(done_a) * V,
                             static_cast<size_t>(chunk) * V * sizeof(float)))
        << kernels::isa_name(kernels::detected_isa()) << ": A's rows from position " << done_a;
    done_a += chunk;
    done_b += b_chunk;
  }
  EXPECT_EQ(done_a, n);
}

}  // namespace
}  // namespace lemma::testing
