// Heap allocations of steady decode steps beyond the bare forward (tests/unit/model's
// decode_allocation_test): on a Q8_0 model (int8 activations in every Q8_0 matmul), a decode forward
// plus the sampling of its rows (greedy, and temperature with top-k/top-p/penalties in a reused
// SamplerScratch) allocates nothing at all; and a whole Engine::step (schedule -> runner -> update,
// with sampling) allocates only its small plain-data bookkeeping: a bounded number of allocations
// per running request, none as large as one row of logits, none growing with the context.
// This executable replaces the global operator new with a counting one (counting is off outside the
// measured regions).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <vector>

#include "lemma/io/gguf.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/quant/gguf_quantizer.h"
#include "unit/engine/engine_fixture.h"
#include "support/counting_new.h"

namespace {
// Short names for the counters of support/counting_new.h (this file is the one that includes it).
std::atomic<bool>& g_counting = lemma::testing::allocations::counting;
std::atomic<int64_t>& g_allocations = lemma::testing::allocations::count;
std::atomic<uint64_t>& g_largest = lemma::testing::allocations::largest;
}  // namespace

namespace lemma::testing {
namespace {

struct Counted {
  int64_t allocations = 0;
  uint64_t largest = 0;  // bytes of the largest allocation
};

template <typename F>
Counted count_allocations(F&& f) {
  g_allocations.store(0);
  g_largest.store(0);
  g_counting.store(true);
  f();
  g_counting.store(false);
  return {g_allocations.load(), g_largest.load()};
}

// stories260K quantized by lemma's GGUF quantizer to Q8_0 (its 172-wide down rows stay f32).
const Model& q8_model() {
  static const Model model = [] {
    const auto path = build_scratch("engine") / "stories260K-q8_0.gguf";
    quant::GgufQuantizeOptions options;
    options.type = DType::kQ8_0;
    quant::quantize_gguf(GgufFile::open(stories_path()), options).write(path);
    return Model::open(path, LoadMode::kCopy);
  }();
  return model;
}

SamplingParams tempered(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.repetition_penalty = 1.1f;
  p.presence_penalty = 0.2f;
  p.seed = seed;
  return p;
}

class EngineAllocations : public ::testing::Test {
 protected:
  void SetUp() override { LEMMA_REQUIRE_SHARED(stories_path()); }
};

// The matmuls of the quantized layers quantize their activations to int8 (llama.cpp's vec_dot_type).
TEST_F(EngineAllocations, ModelRunsInt8Activations) {
  const LayerWeights& l = q8_model().weights().layers.at(0);
  for (const TensorView* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up}) {
    EXPECT_NE(w->dtype, DType::kF32);
    EXPECT_EQ(kernels::default_matmul_precision(w->dtype, kernels::detected_isa()),
              kernels::MatmulPrecision::kInt8Activations);
  }
}

// Decode forwards of two sequences and the sampling of both rows, with the caller alone and with a
// team: after a warm-up, nothing is allocated.
void expect_forward_and_sampling_allocate_nothing(int threads) {
  const Model& model = q8_model();
  const ModelConfig& c = model.config();
  constexpr int64_t kBlockSize = 16, kPrompt = 37, kSteps = 8;
  const int64_t max_context = kPrompt + 3 + kSteps + 1;
  const int64_t blocks_per_seq = (max_context + kBlockSize - 1) / kBlockSize;
  KvCache cache = KvCache::for_model(c, 2 * blocks_per_seq, kBlockSize);
  ForwardWorkspace ws(threads);
  std::vector<std::vector<int32_t>> tables(2), tokens(2);
  for (int32_t s = 0; s < 2; ++s) {
    for (int64_t b = 0; b < blocks_per_seq; ++b) tables[s].push_back(static_cast<int32_t>(s * blocks_per_seq + b));
    tokens[s] = prompt_of(kPrompt, static_cast<uint32_t>(s));
    tokens[s].reserve(static_cast<size_t>(max_context));
  }
  const auto V = static_cast<size_t>(c.vocab_size);
  std::vector<float> logits(2 * V);
  Sampler greedy_sampler(SamplingParams{.temperature = 0.0f}, 1);
  Sampler tempered_sampler(tempered(7), 1);
  std::vector<SamplerScratch> scratch(2);
  ForwardBatch batch;
  for (int32_t s = 0; s < 2; ++s) batch.sequences.push_back({tokens[s], 0, tables[s], LogitsRequest::kLast});
  model.forward(batch, cache, ws, logits);
  ws.reserve(c, 2, 2, max_context);
  auto step = [&] {
    for (int32_t s = 0; s < 2; ++s) {
      Sampler& sampler = s == 0 ? greedy_sampler : tempered_sampler;
      const auto prompt = std::span<const int32_t>(tokens[s]).first(kPrompt);
      const auto outputs = std::span<const int32_t>(tokens[s]).subspan(kPrompt);
      const SampleResult r = sampler.sample(std::span<const float>(logits).subspan(s * V, V), prompt, outputs, scratch[s]);
      ASSERT_NE(r.token, kNoToken);
      tokens[s].push_back(r.token);  // within the reserved capacity
      SequenceInput& in = batch.sequences[static_cast<size_t>(s)];
      in.num_cached = static_cast<int64_t>(tokens[s].size()) - 1;
      in.token_ids = std::span<const int32_t>(tokens[s]).last(1);
    }
    model.forward(batch, cache, ws, logits);
  };
  for (int i = 0; i < 3; ++i) step();
  const Counted counted = count_allocations([&] {
    for (int i = 0; i < kSteps; ++i) step();
  });
  EXPECT_EQ(counted.allocations, 0) << threads << " threads; largest " << counted.largest << " bytes";
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

TEST_F(EngineAllocations, Int8DecodeForwardAndSamplingAllocateNothing) {
  expect_forward_and_sampling_allocate_nothing(1);
  expect_forward_and_sampling_allocate_nothing(2);
}

// Engine::step in steady decode (three requests: greedy, and two tempered with penalties), over two
// windows of 16 steps far apart in context. The forward and the sampling allocate nothing (above);
// what remains is the plain data a step hands over, by design: per request, the plan's diff, the
// runner's sampled tokens and the step's output each own a token vector (3); per step, the plan's
// two lists, the runner's sampled list (reserved once, not grown entry by entry), the outputs and
// the report (5); and per block a request fills (once per block_size steps)
// at most 8: the pool's list of the new block, its prefix-cache entry, and the amortized growth of
// the vectors that hold the request's blocks, hashes and tokens (scheduler's and runner's). None is
// as large as one row of logits.
TEST_F(EngineAllocations, EngineDecodeStepsAllocateOnlySmallBookkeeping) {
  constexpr int kRequests = 3, kSteps = 16;
  EngineConfig config = engine_config(64, 256, 4);
  config.keep_logits = false;
  config.num_threads = 2;
  Engine engine(q8_model(), config);
  for (RequestId id = 1; id <= kRequests; ++id) {
    RequestOptions o = greedy(200);
    if (id > 1) o.sampling = tempered(id);
    engine.add_request(id, prompt_of(20, static_cast<uint32_t>(id)), o);
  }
  auto steps = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const StepReport report = engine.step();
      ASSERT_EQ(report.num_sequences, kRequests);
    }
  };
  steps(8);  // prefill, then warm decode steps
  const Counted early = count_allocations([&] { steps(kSteps); });
  steps(100);
  const Counted late = count_allocations([&] { steps(kSteps); });
  const uint64_t logits_row = static_cast<uint64_t>(q8_model().config().vocab_size) * sizeof(float);
  const int64_t per_step = 3 * kRequests + 5;
  const int64_t block_fills = (kSteps + config.kv.block_size - 1) / config.kv.block_size * kRequests;
  for (const Counted& c : {early, late}) {
    EXPECT_LT(c.largest, logits_row) << "an allocation as large as a row of logits in a decode step";
    EXPECT_LE(c.allocations, kSteps * per_step + 8 * block_fills);
  }
  RecordProperty("allocations_per_step", std::to_string(static_cast<double>(late.allocations) / kSteps));
  std::printf("Engine::step, %d requests in steady decode: %.2f allocations per step (largest %llu bytes)\n",
              kRequests, static_cast<double>(late.allocations) / kSteps, static_cast<unsigned long long>(late.largest));
}

TEST(EngineAllocationCounter, SeesAllocations) {  // the counter itself works
  static std::vector<int>* sink = nullptr;  // escapes, so the allocations cannot be elided
  const Counted counted = count_allocations([] { sink = new std::vector<int>(1000); });
  delete sink;
  EXPECT_EQ(counted.allocations, 2);
  EXPECT_EQ(counted.largest, 4000u);
}

}  // namespace
}  // namespace lemma::testing
