// The capacity and cost models against independent arithmetic and against what KvCache really
// allocates: this test binary's calloc (KvCache's allocator) counts the bytes asked for while armed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>

#include "lemma/base/error.h"
#include "lemma/bench/capacity.h"
#include "lemma/bench/cost.h"
#include "lemma/model/kv_cache.h"
#include "random_model.h"

extern "C" void* __libc_calloc(size_t count, size_t size);  // glibc's own

namespace {
std::atomic<bool> g_count_calloc{false};
std::atomic<uint64_t> g_calloc_bytes{0};
}  // namespace

extern "C" void* calloc(size_t count, size_t size) {
  if (g_count_calloc.load(std::memory_order_relaxed)) g_calloc_bytes.fetch_add(count * size);
  return __libc_calloc(count, size);
}

namespace lemma::bench {
namespace {

constexpr KvDtype kAllKvDtypes[] = {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8};

// Bytes KvCache::for_model asks calloc for.
uint64_t allocated_by_cache(const ModelConfig& c, int64_t num_blocks, int64_t block_size, KvDtype dtype) {
  g_calloc_bytes.store(0);
  g_count_calloc.store(true);
  {
    const KvCache cache = KvCache::for_model(c, num_blocks, block_size, dtype);
    g_count_calloc.store(false);
  }
  const uint64_t bytes = g_calloc_bytes.load();
  EXPECT_GT(bytes, 0u) << "KvCache no longer allocates through calloc: measure its allocation another way";
  return bytes;
}

ModelConfig config_with(int64_t layers, int64_t heads, int64_t kv_heads, int64_t head_dim) {
  ModelConfig c = testing::small_config();
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = head_dim;
  return c;
}

TEST(Capacity, KvBytesPerTokenMatchesTheCacheLayout) {
  for (const ModelConfig& c : {config_with(2, 4, 4, 8), config_with(3, 4, 2, 16), config_with(5, 8, 1, 32)}) {
    EXPECT_EQ(kv_bytes_per_token(c), uint64_t(2 * c.num_layers * c.num_kv_heads * c.head_dim * 4));
    EXPECT_EQ(kv_bytes_per_token(c, KvDtype::kBf16), kv_bytes_per_token(c) / 2);
    // int8 / fp8: one byte per value plus one f32 scale per token and KV head.
    for (KvDtype d : {KvDtype::kInt8, KvDtype::kFp8}) {
      EXPECT_EQ(kv_bytes_per_token(c, d), uint64_t(2 * c.num_layers * c.num_kv_heads * (c.head_dim + 4)));
    }
    // A one-block cache of block size 1 holds exactly one token, in every dtype.
    for (KvDtype d : {KvDtype::kF32, KvDtype::kBf16, KvDtype::kInt8, KvDtype::kFp8}) {
      EXPECT_EQ(KvCache::for_model(c, 1, 1, d).bytes(), kv_bytes_per_token(c, d));
    }
  }
}

// The model's bytes against what the cache allocates, for every KV dtype: exactly (kv_cache_bytes),
// and per token (the tokens' kv_bytes_per_token plus, for int8/fp8, under 64 bytes of alignment).
TEST(Capacity, PredictedBytesEqualWhatTheCacheAllocates) {
  for (const ModelConfig& c : {config_with(2, 4, 4, 8), config_with(3, 6, 3, 24), config_with(1, 4, 1, 20)}) {
    for (KvDtype d : kAllKvDtypes) {
      for (auto [blocks, block_size] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {10, 16}}) {
        SCOPED_TRACE(::testing::Message() << kernels::kv_dtype_name(d) << " head_dim " << c.head_dim << ", " << blocks
                                        << " blocks of " << block_size);
        const uint64_t real = allocated_by_cache(c, blocks, block_size, d);
        EXPECT_EQ(kv_cache_bytes(c, blocks, block_size, d), real);
        const uint64_t tokens_bytes = static_cast<uint64_t>(blocks * block_size) * kv_bytes_per_token(c, d);
        ASSERT_GE(real, tokens_bytes);
        if (kernels::kv_dtype_has_scales(d)) {
          EXPECT_LT(real - tokens_bytes, 64u);
        } else {
          EXPECT_EQ(real, tokens_bytes);
        }
      }
    }
  }
}

// The scales' padding can be all that stops a block from fitting: int8, 1 layer x 1 KV head x 20,
// blocks of one token: 2 x (20 + 4) = 48 bytes a token, but one block allocates 40 bytes of keys and
// values padded to 64, then 8 bytes of scales = 72 bytes, more than a 48-byte budget.
TEST(Capacity, AlignmentPaddingCountsAgainstTheBudget) {
  const ModelConfig c = config_with(1, 4, 1, 20);
  ASSERT_EQ(kv_bytes_per_token(c, KvDtype::kInt8), 48u);
  EXPECT_EQ(allocated_by_cache(c, 1, 1, KvDtype::kInt8), 72u);
  EXPECT_EQ(plan_capacity(c, 0, 48, 1, 1, KvDtype::kInt8).max_blocks, 0);
  EXPECT_EQ(plan_capacity(c, 0, 72, 1, 1, KvDtype::kInt8).max_blocks, 1);
}

// G5: the predicted KV memory of the planned sequences against a real allocation, within 10%.
TEST(Capacity, PlannedSequencesFitAMeasuredAllocation) {
  struct Case {
    ModelConfig config;
    int64_t context, block_size;
    uint64_t weights, memory;
  };
  const Case cases[] = {{config_with(2, 4, 4, 8), 100, 16, 1000, 4u << 20},
                        {config_with(3, 4, 2, 16), 257, 7, 0, 8u << 20},
                        {config_with(4, 8, 1, 32), 64, 1, 1u << 20, 6u << 20}};
  for (const Case& k : cases) {
    for (KvDtype d : kAllKvDtypes) {
      SCOPED_TRACE(kernels::kv_dtype_name(d));
      const CapacityPlan plan = plan_capacity(k.config, k.weights, k.memory, k.context, k.block_size, d);
      ASSERT_GT(plan.max_sequences, 0);
      const int64_t blocks_per_seq = (k.context + k.block_size - 1) / k.block_size;
      const double predicted = static_cast<double>(plan.kv_bytes_per_sequence) * static_cast<double>(plan.max_sequences);
      const uint64_t sequences = allocated_by_cache(k.config, plan.max_sequences * blocks_per_seq, k.block_size, d);
      EXPECT_NEAR(static_cast<double>(sequences), predicted, 0.1 * predicted);
      // Everything planned fits the budget left after the weights, and one more block would not.
      EXPECT_LE(allocated_by_cache(k.config, plan.max_blocks, k.block_size, d) + k.weights, k.memory);
      EXPECT_GT(allocated_by_cache(k.config, plan.max_blocks + 1, k.block_size, d) + k.weights, k.memory);
      EXPECT_GT(static_cast<double>(plan.max_sequences + 1) * static_cast<double>(plan.kv_bytes_per_sequence),
                static_cast<double>(k.memory - k.weights));
    }
  }
}

TEST(Capacity, WeightsLargerThanTheBudgetLeaveNoSequences) {
  const ModelConfig c = config_with(2, 4, 2, 8);
  EXPECT_EQ(plan_capacity(c, 10u << 20, 1u << 20, 128).max_sequences, 0);
  EXPECT_THROW(plan_capacity(c, 0, 1u << 20, 0), InvalidArgument);
  EXPECT_THROW(plan_capacity(c, 0, 1u << 20, 16, 0), InvalidArgument);
}

// G23: a quantized KV cache holds more tokens in the same memory: int8 with head_dim 64 stores
// 64 + 4 bytes per head row instead of 256, so 256/68 = 3.76x the sequences (within block rounding).
TEST(Capacity, QuantizedKvFitsMoreSequences) {
  const ModelConfig c = config_with(4, 8, 2, 64);
  const auto f32 = plan_capacity(c, 0, 1u << 30, 1024, 16, KvDtype::kF32);
  const auto int8 = plan_capacity(c, 0, 1u << 30, 1024, 16, KvDtype::kInt8);
  const auto bf16 = plan_capacity(c, 0, 1u << 30, 1024, 16, KvDtype::kBf16);
  EXPECT_EQ(bf16.max_sequences, 2 * f32.max_sequences);
  EXPECT_NEAR(static_cast<double>(int8.max_sequences) / static_cast<double>(f32.max_sequences), 256.0 / 68.0, 0.05);
}

TEST(Capacity, WeightBytesCountEveryTensor) {
  const ModelConfig c = testing::small_config();
  const Model model = testing::make_random_model(c, 3).build();
  const uint64_t h = c.hidden_size, ffn = c.intermediate_size, layers = c.num_layers, vocab = c.vocab_size;
  const uint64_t per_layer = h * c.q_dim() + 2 * h * c.kv_dim() + c.q_dim() * h + 3 * h * ffn;
  const uint64_t vectors = layers * 2 * h + h + (c.qkv_bias ? layers * (c.q_dim() + 2 * c.kv_dim()) : 0);
  const uint64_t embedding = vocab * h, head = c.tie_word_embeddings ? 0 : vocab * h;
  const WeightBytes b = weight_bytes(model.config(), model.weights());
  EXPECT_EQ(b.resident, 4 * (layers * per_layer + vectors + embedding + head));
  EXPECT_EQ(b.read_per_token, 4 * (layers * per_layer + vectors + vocab * h + h));
}

// A Mixtral-style random model (4 experts of width 8, top-2, every layer MoE): resident bytes hold
// every expert; a decode step of one token reads the top-2 experts of each layer (the routed-bytes
// roofline), and a step that ran A (expert, layer) pairs reads A experts' bytes (G27).
TEST(Capacity, MoeWeightBytesCountRoutedExpertsOnly) {
  const testing::RandomModel rm = testing::make_random_moe_model(9);
  const ModelConfig& c = rm.config;
  const Model model = rm.build();
  const uint64_t h = c.hidden_size, layers = c.num_layers, vocab = c.vocab_size, E = 4, W = 8;
  const uint64_t attention = h * c.q_dim() + 2 * h * c.kv_dim() + c.q_dim() * h;
  const uint64_t vectors = layers * 2 * h + h + layers * E * h;  // norms, final norm, f32 routers
  const uint64_t expert = 3 * h * W;
  const WeightBytes b = weight_bytes(model.config(), model.weights());
  EXPECT_EQ(b.routed_experts, static_cast<int64_t>(layers * E));
  EXPECT_EQ(b.routed_expert_bytes, 4 * layers * E * expert);
  EXPECT_EQ(b.resident, 4 * (layers * attention + vectors + 2 * vocab * h + layers * E * expert));
  EXPECT_EQ(b.read_outside_experts, 4 * (layers * attention + vectors + vocab * h + h));
  EXPECT_EQ(b.read_per_token, b.read_outside_experts + 4 * layers * 2 * expert);  // top-2 per layer
  EXPECT_EQ(b.read_per_step(3.0), b.read_outside_experts + 4 * 3 * expert);
  // Prefill: per token the router, 2 experts and attention.
  const double per_token = static_cast<double>(layers * (attention + E * h + 2 * expert));
  const double attention_macs = static_cast<double>(layers) * 2 * static_cast<double>(c.q_dim()) * (1 + 2 + 3);
  EXPECT_DOUBLE_EQ(prefill_flops(c, model.weights(), 3),
                   2 * (per_token * 3 + attention_macs + static_cast<double>(vocab * h)));
}

TEST(Cost, DecodeBytesShareTheWeightsAcrossTheBatch) {
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(1000, 10, 5.0, 1), 1050.0);
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(1000, 10, 5.0, 4), 300.0);
  EXPECT_DOUBLE_EQ(mean_decode_context(128), 64.5);
  EXPECT_DOUBLE_EQ(mean_decode_context(0), 0.0);
  EXPECT_DOUBLE_EQ(mean_decode_context(128, 2048), 2112.5);
}

TEST(Cost, PrefillFlopsCountMatricesAttentionAndHead) {
  const ModelConfig c = testing::small_config();
  const Model model = testing::make_random_model(c, 5).build();
  const double h = c.hidden_size, ffn = c.intermediate_size, layers = c.num_layers, vocab = c.vocab_size;
  const double per_token = layers * (2 * h * c.q_dim() + 2 * h * c.kv_dim() + 3 * h * ffn);
  const double t = 6;
  const double attention = layers * 2 * c.q_dim() * (1 + 2 + 3 + 4 + 5 + 6);
  EXPECT_DOUBLE_EQ(prefill_flops(c, model.weights(), 6), 2 * (per_token * t + attention + vocab * h));
  // After 10 cached tokens, token p attends over 10 + p + 1 positions.
  const double deep_attention = layers * 2 * c.q_dim() * (11 + 12 + 13 + 14 + 15 + 16);
  EXPECT_DOUBLE_EQ(prefill_flops(c, model.weights(), 6, 10), 2 * (per_token * t + deep_attention + vocab * h));
}

}  // namespace
}  // namespace lemma::bench
