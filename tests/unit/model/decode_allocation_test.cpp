// Zero heap allocations per decode step in steady state (issue 5, G20): after a warm-up, several
// decode forwards of the same shapes must not call operator new at all, on any thread, with the
// caller alone and with a thread team. This executable replaces the global operator new with a
// counting one (only this test binary; counting is off outside the measured region).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <vector>

#include "lemma/model/model.h"
#include "random_model.h"
#include "support/counting_new.h"

namespace {
// Short names for the counters of support/counting_new.h (this file is the one that includes it).
std::atomic<bool>& g_counting = lemma::testing::allocations::counting;
std::atomic<int64_t>& g_allocations = lemma::testing::allocations::count;
}  // namespace

namespace lemma::testing {
namespace {

constexpr int64_t kBlockSize = 16;

// Big enough that the matmuls and attention really split into tiles over the team.
ModelConfig decode_config() {
  ModelConfig c = small_config();
  c.vocab_size = 512;
  c.hidden_size = 128;
  c.intermediate_size = 384;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.rope.rotary_dim = 16;
  c.max_position_embeddings = 512;
  c.rope.max_position_embeddings = 512;
  return c;
}

// Prefills a prompt, warms up with a few decode steps, then counts allocations over `steps`
// more decode steps of two sequences (one token each, growing contexts).
int64_t allocations_per_decode(int threads, int steps) {
  const RandomModel rm = make_random_model(decode_config(), 11);
  const Model model = rm.build();
  const ModelConfig& c = model.config();
  KvCache cache = KvCache::for_model(c, 64, kBlockSize);
  ForwardWorkspace ws(threads);
  EXPECT_EQ(ws.team->size(), threads);

  constexpr int64_t kSequences = 2, kPrompt = 37;
  const int64_t max_context = kPrompt + 8 + steps + 1;
  const int64_t blocks_per_seq = (max_context + kBlockSize - 1) / kBlockSize;
  std::vector<std::vector<int32_t>> tables(kSequences);
  for (int64_t s = 0; s < kSequences; ++s)
    for (int64_t b = 0; b < blocks_per_seq; ++b) tables[static_cast<size_t>(s)].push_back(static_cast<int32_t>(s * blocks_per_seq + b));
  std::vector<int32_t> prompt(kPrompt);
  for (int64_t i = 0; i < kPrompt; ++i) prompt[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7 + 3) % c.vocab_size);
  std::vector<float> logits(static_cast<size_t>(kSequences * c.vocab_size));

  ForwardBatch batch;
  for (int64_t s = 0; s < kSequences; ++s) batch.sequences.push_back({prompt, 0, tables[static_cast<size_t>(s)], LogitsRequest::kLast});
  model.forward(batch, cache, ws, logits);

  // One token per sequence per step; the batch object and its spans are reused, only values change.
  std::vector<int32_t> next(kSequences, 1);
  for (int64_t s = 0; s < kSequences; ++s) {
    batch.sequences[static_cast<size_t>(s)].token_ids = std::span<const int32_t>(next).subspan(static_cast<size_t>(s), 1);
    batch.sequences[static_cast<size_t>(s)].num_cached = kPrompt;
  }
  // Warm-up: the workspace sizes itself for the largest context it will see (reserve grows only).
  ws.reserve(c, kSequences, kSequences, max_context);
  auto step = [&] {
    model.forward(batch, cache, ws, logits);
    for (int64_t s = 0; s < kSequences; ++s) {
      next[static_cast<size_t>(s)] = static_cast<int32_t>((next[static_cast<size_t>(s)] * 13 + 5) % c.vocab_size);
      ++batch.sequences[static_cast<size_t>(s)].num_cached;
    }
  };
  for (int i = 0; i < 3; ++i) step();

  g_allocations.store(0);
  g_counting.store(true);
  for (int i = 0; i < steps; ++i) step();
  g_counting.store(false);
  for (float v : logits) EXPECT_TRUE(std::isfinite(v));
  return g_allocations.load();
}

TEST(DecodeAllocations, SteadyStateDecodeAllocatesNothingInline) { EXPECT_EQ(allocations_per_decode(1, 8), 0); }

TEST(DecodeAllocations, SteadyStateDecodeAllocatesNothingWithATeam) {
  EXPECT_EQ(allocations_per_decode(2, 8), 0);
  EXPECT_EQ(allocations_per_decode(4, 8), 0);
}

TEST(DecodeAllocations, CounterSeesAllocations) {  // the counter itself works
  g_allocations.store(0);
  g_counting.store(true);
  auto* p = new std::vector<int>(100);
  g_counting.store(false);
  delete p;
  EXPECT_GE(g_allocations.load(), 2);
}

}  // namespace
}  // namespace lemma::testing
