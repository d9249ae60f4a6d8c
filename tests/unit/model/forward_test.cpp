// Model::forward against the float64 reference forward, and the KV-cache contracts: prefill then
// decode equals one full forward; a batch with scattered block tables equals separate runs; the
// calibration observer sees every layer input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "lemma/base/error.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/model/weight_names.h"
#include "random_model.h"

namespace lemma::testing {
namespace {

constexpr int64_t kBlockSize = 4;

std::vector<int32_t> tokens_of(int64_t n, uint32_t seed, int64_t vocab) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return t;
}

// All-position logits of one sequence from an empty, contiguous cache.
std::vector<float> full_forward(const Model& model, const std::vector<int32_t>& tokens) {
  const auto& c = model.config();
  KvCache cache = KvCache::for_model(c, 64, kBlockSize);
  ForwardWorkspace ws;
  const auto table = contiguous_block_table(static_cast<int64_t>(tokens.size()), kBlockSize);
  ForwardBatch batch;
  batch.sequences.push_back({tokens, 0, table, LogitsRequest::kAll});
  std::vector<float> logits(tokens.size() * static_cast<size_t>(c.vocab_size));
  model.forward(batch, cache, ws, logits);
  return logits;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

double max_abs(const std::vector<double>& a) {
  double m = 0;
  for (double x : a) m = std::max(m, std::abs(x));
  return m;
}

void expect_matches_reference(const ModelConfig& config, int64_t num_tokens) {
  const RandomModel rm = make_random_model(config, 7);
  const Model model = rm.build();
  const auto tokens = tokens_of(num_tokens, 3, config.vocab_size);
  const auto got = full_forward(model, tokens);
  const auto want = reference_forward(rm, tokens);
  EXPECT_LE(max_abs_diff(got, want), 1e-4 * max_abs(want) + 1e-5) << config.summary();
}

TEST(Forward, MatchesReferenceDefault) { expect_matches_reference(small_config(), 13); }

TEST(Forward, MatchesReferenceVariants) {
  ModelConfig mqa = small_config();
  mqa.num_kv_heads = 1;
  expect_matches_reference(mqa, 9);
  ModelConfig mha = small_config();
  mha.num_kv_heads = 4;
  expect_matches_reference(mha, 9);
  ModelConfig bias = small_config();
  bias.qkv_bias = true;
  expect_matches_reference(bias, 9);
  ModelConfig qk = small_config();
  qk.qk_norm = true;
  qk.head_dim = 16;  // q_dim 64 != hidden 32, as in Qwen3
  qk.rope.rotary_dim = 16;
  expect_matches_reference(qk, 9);
  ModelConfig tied = small_config();
  tied.tie_word_embeddings = true;
  expect_matches_reference(tied, 9);
  ModelConfig linear = small_config();
  linear.rope.scaling.type = RopeScalingType::kLinear;
  linear.rope.scaling.factor = 4.0;
  expect_matches_reference(linear, 9);
}

TEST(Forward, SlidingWindowMatchesReference) {
  ModelConfig c = small_config();
  c.sliding_window = {3, 5};
  expect_matches_reference(c, 14);
  // The window must matter: without it the logits differ.
  const RandomModel windowed = make_random_model(c, 7);
  ModelConfig full_cfg = c;
  full_cfg.sliding_window.clear();
  RandomModel full = windowed;
  full.config = full_cfg;
  const auto tokens = tokens_of(14, 3, c.vocab_size);
  const auto a = full_forward(windowed.build(), tokens);
  const auto b = full_forward(full.build(), tokens);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
  EXPECT_GT(diff, 1e-3);
}

TEST(Forward, DynamicNtkMatchesReference) {
  ModelConfig c = small_config();
  c.max_position_embeddings = 8;
  c.rope.max_position_embeddings = 8;
  c.rope.scaling.type = RopeScalingType::kDynamicNtk;
  c.rope.scaling.factor = 2.0;
  expect_matches_reference(c, 20);  // longer than max_position_embeddings: the base is rescaled
  // And it differs from plain RoPE.
  const RandomModel dyn = make_random_model(c, 7);
  RandomModel plain = dyn;
  plain.config.rope.scaling = {};
  const auto tokens = tokens_of(20, 3, c.vocab_size);
  const auto a = full_forward(dyn.build(), tokens);
  const auto b = full_forward(plain.build(), tokens);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
  EXPECT_GT(diff, 1e-3);
}

TEST(Forward, PrefillThenDecodeEqualsFullForward) {
  const RandomModel rm = make_random_model(small_config(), 11);
  const Model model = rm.build();
  const auto& c = model.config();
  const auto tokens = tokens_of(15, 5, c.vocab_size);
  const auto full = full_forward(model, tokens);

  KvCache cache = KvCache::for_model(c, 16, kBlockSize);
  ForwardWorkspace ws;
  const std::vector<int32_t> table = {9, 3, 12, 0};  // scattered blocks
  const size_t V = static_cast<size_t>(c.vocab_size);
  std::vector<float> logits(V);
  const int64_t prompt = 6;
  ForwardBatch prefill;
  prefill.sequences.push_back({std::span(tokens).first(prompt), 0, table, LogitsRequest::kLast});
  model.forward(prefill, cache, ws, logits);
  for (size_t v = 0; v < V; ++v) ASSERT_NEAR(logits[v], full[(prompt - 1) * V + v], 1e-5);
  for (int64_t p = prompt; p < static_cast<int64_t>(tokens.size()); ++p) {
    ForwardBatch step;
    step.sequences.push_back({std::span(tokens).subspan(static_cast<size_t>(p), 1), p, table, LogitsRequest::kLast});
    model.forward(step, cache, ws, logits);
    for (size_t v = 0; v < V; ++v) ASSERT_NEAR(logits[v], full[static_cast<size_t>(p) * V + v], 1e-5) << "pos " << p;
  }
}

TEST(Forward, BatchOfSequencesEqualsSeparateRuns) {
  const RandomModel rm = make_random_model(small_config(), 13);
  const Model model = rm.build();
  const auto& c = model.config();
  const size_t V = static_cast<size_t>(c.vocab_size);
  const auto a = tokens_of(10, 1, c.vocab_size);
  const auto b = tokens_of(7, 2, c.vocab_size);
  const auto full_a = full_forward(model, a);
  const auto full_b = full_forward(model, b);

  KvCache cache = KvCache::for_model(c, 8, kBlockSize);
  ForwardWorkspace ws;
  const std::vector<int32_t> table_a = {5, 1, 6}, table_b = {2, 7};
  // Step 1: prefix of a (4 tokens, all logits) and all of b (last logits) in one batch.
  ForwardBatch batch;
  batch.sequences.push_back({std::span(a).first(4), 0, table_a, LogitsRequest::kAll});
  batch.sequences.push_back({b, 0, table_b, LogitsRequest::kLast});
  std::vector<float> logits(5 * V);
  model.forward(batch, cache, ws, logits);
  for (size_t i = 0; i < 4 * V; ++i) ASSERT_NEAR(logits[i], full_a[i], 1e-5);
  for (size_t v = 0; v < V; ++v) ASSERT_NEAR(logits[4 * V + v], full_b[6 * V + v], 1e-5);
  // Step 2: the rest of a as a chunk (chunked prefill), nothing for b.
  ForwardBatch rest;
  rest.sequences.push_back({std::span(a).subspan(4), 4, table_a, LogitsRequest::kAll});
  logits.assign(6 * V, 0.0f);
  model.forward(rest, cache, ws, logits);
  for (size_t i = 0; i < 6 * V; ++i) ASSERT_NEAR(logits[i], full_a[4 * V + i], 1e-5);
}

TEST(Forward, RejectsBadBatches) {
  const Model model = make_random_model(small_config(), 1).build();
  KvCache cache = KvCache::for_model(model.config(), 4, kBlockSize);
  ForwardWorkspace ws;
  std::vector<float> logits(static_cast<size_t>(model.config().vocab_size));
  const std::vector<int32_t> bad_token = {1, 40}, ok = {1, 2, 3, 4, 5}, table = {0}, bad_block = {0, 4},
                             two_blocks = {0, 1};
  ForwardBatch b1;
  b1.sequences.push_back({bad_token, 0, table, LogitsRequest::kLast});
  EXPECT_THROW(model.forward(b1, cache, ws, logits), InvalidArgument);
  ForwardBatch b2;
  b2.sequences.push_back({ok, 0, table, LogitsRequest::kLast});  // 5 tokens need 2 blocks
  EXPECT_THROW(model.forward(b2, cache, ws, logits), InvalidArgument);
  ForwardBatch b3;
  b3.sequences.push_back({ok, 0, bad_block, LogitsRequest::kLast});
  EXPECT_THROW(model.forward(b3, cache, ws, logits), InvalidArgument);
  ForwardBatch b4;
  b4.sequences.push_back({ok, 0, two_blocks, LogitsRequest::kAll});
  EXPECT_THROW(model.forward(b4, cache, ws, logits), InvalidArgument);  // logits too small
  ForwardBatch b5;
  b5.sequences.push_back({std::span<const int32_t>(), 0, table, LogitsRequest::kLast});
  EXPECT_THROW(model.forward(b5, cache, ws, logits), InvalidArgument);  // nothing to take logits of
  KvCache wrong_heads(model.config().num_layers, 4, kBlockSize, 1, model.config().head_dim);
  EXPECT_THROW(model.forward(b2, wrong_heads, ws, logits), InvalidArgument);
}

TEST(Forward, MissingOrMisshapenTensorIsAFormatError) {
  RandomModel rm = make_random_model(small_config(), 1);
  rm.tensors = std::make_shared<std::map<std::string, std::vector<float>>>(*rm.tensors);
  rm.tensors->erase("model.layers.1.mlp.up_proj.weight");
  try {
    rm.build();
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.mlp.up_proj.weight"), std::string::npos);
  }
  RandomModel rm2 = make_random_model(small_config(), 1);
  rm2.shapes["model.layers.0.self_attn.k_proj.weight"] = Shape{8, 64};
  EXPECT_THROW(rm2.build(), FormatError);
}

}  // namespace
}  // namespace lemma::testing

namespace lemma::testing {
namespace {

// llama.cpp's GGUF llama layout: q/k rows permuted within each head (row 2i+t <- row t*d/2+i) and
// interleaved RoPE compute the same function as HF's layout with half-split RoPE.
void expect_interleaved_equals_half_split(int64_t head_dim, int64_t num_tokens) {
  ModelConfig c = small_config();
  c.head_dim = head_dim;
  c.rope.rotary_dim = head_dim;
  const RandomModel hf = make_random_model(c, 21);
  RandomModel gguf_like = hf;
  gguf_like.tensors = std::make_shared<std::map<std::string, std::vector<float>>>(*hf.tensors);
  gguf_like.config.rope.layout = RopeLayout::kInterleaved;
  for (int64_t l = 0; l < c.num_layers; ++l)
    for (auto role : {WeightRole::kQ, WeightRole::kK}) {
      const std::string name = weight_name(WeightFormat::kHf, role, l);
      const auto& src = hf.at(name);
      auto& dst = (*gguf_like.tensors)[name];
      const int64_t K = c.hidden_size, heads = static_cast<int64_t>(src.size()) / (K * head_dim);
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < head_dim / 2; ++i)
          for (int64_t t = 0; t < 2; ++t)
            std::copy_n(src.begin() + (h * head_dim + t * head_dim / 2 + i) * K, K,
                        dst.begin() + (h * head_dim + 2 * i + t) * K);
    }
  const auto tokens = tokens_of(num_tokens, 4, c.vocab_size);
  const auto a = full_forward(hf.build(), tokens);
  const auto b = full_forward(gguf_like.build(), tokens);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << "head_dim " << head_dim << " element " << i;
}

TEST(Forward, InterleavedRopeOnPermutedRowsEqualsHalfSplit) {
  expect_interleaved_equals_half_split(8, 7);
  expect_interleaved_equals_half_split(64, 7);
}

}  // namespace
}  // namespace lemma::testing

namespace lemma::testing {
namespace {

TEST(Forward, SlidingWindowNeedsOnlyTheBlocksInTheWindow) {
  // Window 4, blocks of 2: decoding reuses at most 3 live blocks while the sequence grows to 16;
  // freed blocks are marked -1 in the table and recycled, and logits equal the full forward.
  ModelConfig c = small_config();
  c.sliding_window = {4, 3};
  EXPECT_EQ(c.first_attended_position(10), 7);
  const RandomModel rm = make_random_model(c, 17);
  const Model model = rm.build();
  const auto tokens = tokens_of(16, 8, c.vocab_size);
  const auto full = full_forward(model, tokens);
  const int64_t block_size = 2;
  KvCache cache = KvCache::for_model(c, 3, block_size);
  ForwardWorkspace ws;
  const size_t V = static_cast<size_t>(c.vocab_size);
  std::vector<float> logits(V);
  std::vector<int32_t> table, free_blocks = {0, 1, 2};
  for (int64_t p = 0; p < static_cast<int64_t>(tokens.size()); ++p) {
    // Free blocks wholly before the window, then make sure position p has a block.
    const int64_t first_block = c.first_attended_position(p) / block_size;
    for (int64_t b = 0; b < first_block; ++b)
      if (table[static_cast<size_t>(b)] >= 0) {
        free_blocks.push_back(table[static_cast<size_t>(b)]);
        table[static_cast<size_t>(b)] = -1;
      }
    if (p % block_size == 0) {
      ASSERT_FALSE(free_blocks.empty()) << "more than 3 blocks live at position " << p;
      table.push_back(free_blocks.back());
      free_blocks.pop_back();
    }
    ForwardBatch step;
    step.sequences.push_back({std::span(tokens).subspan(static_cast<size_t>(p), 1), p, table, LogitsRequest::kLast});
    model.forward(step, cache, ws, logits);
    for (size_t v = 0; v < V; ++v) ASSERT_NEAR(logits[v], full[static_cast<size_t>(p) * V + v], 1e-5) << "pos " << p;
  }
}

TEST(Forward, ScaledRopePrefillThenDecodeEqualsFullForward) {
  for (auto type : {RopeScalingType::kLinear, RopeScalingType::kYarn, RopeScalingType::kLlama3}) {
    ModelConfig c = small_config();
    c.rope.scaling.type = type;
    c.rope.scaling.factor = 4.0;
    c.rope.scaling.original_max_position_embeddings = 16;
    const Model model = make_random_model(c, 5).build();
    const auto tokens = tokens_of(12, 9, c.vocab_size);
    const auto full = full_forward(model, tokens);
    KvCache cache = KvCache::for_model(c, 4, 4);
    ForwardWorkspace ws;
    const std::vector<int32_t> table = {3, 1, 2};
    const size_t V = static_cast<size_t>(c.vocab_size);
    std::vector<float> logits(V);
    ForwardBatch prefill;
    prefill.sequences.push_back({std::span(tokens).first(5), 0, table, LogitsRequest::kLast});
    model.forward(prefill, cache, ws, logits);
    for (int64_t p = 5; p < 12; ++p) {
      ForwardBatch step;
      step.sequences.push_back({std::span(tokens).subspan(static_cast<size_t>(p), 1), p, table, LogitsRequest::kLast});
      model.forward(step, cache, ws, logits);
      for (size_t v = 0; v < V; ++v)
        ASSERT_NEAR(logits[v], full[static_cast<size_t>(p) * V + v], 1e-5) << to_string(type) << " pos " << p;
    }
  }
}

}  // namespace
}  // namespace lemma::testing

namespace lemma::testing {
namespace {

TEST(Forward, ThreadCountDoesNotChangeTheResult) {
  ModelConfig c = small_config();
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.vocab_size = 2000;        // enough rows for the LM head to be split
  c.intermediate_size = 512;  // and gate/up
  const Model model = make_random_model(c, 23).build();
  const auto tokens = tokens_of(9, 4, c.vocab_size);
  const auto single = full_forward(model, tokens);
  for (int threads : {2, 3, 4}) {
    KvCache cache = KvCache::for_model(c, 64, kBlockSize);
    ForwardWorkspace ws(threads);
    ASSERT_EQ(ws.team->size(), threads);
    const auto table = contiguous_block_table(static_cast<int64_t>(tokens.size()), kBlockSize);
    ForwardBatch batch;
    batch.sequences.push_back({tokens, 0, table, LogitsRequest::kAll});
    std::vector<float> logits(single.size());
    model.forward(batch, cache, ws, logits);
    EXPECT_EQ(logits, single) << threads << " threads";
  }
}

// One kernel scratch per team thread (indexed by ThreadTeam's worker index), grown up front to
// what the forward's kernels ask for (KernelSet::scratch_bytes; 0 unless AMX) and never shrunk.
TEST(ForwardWorkspaceTest, KeepsOneKernelScratchPerTeamThread) {
  ForwardWorkspace ws(3);
  ASSERT_EQ(ws.kernel_scratch.size(), 3u);
  ws.reserve_kernel_scratch(0);
  for (const kernels::KernelScratch& s : ws.kernel_scratch) EXPECT_EQ(s.capacity(), 0u);
  ws.reserve_kernel_scratch(4096);
  ws.reserve_kernel_scratch(100);
  for (const kernels::KernelScratch& s : ws.kernel_scratch) EXPECT_GE(s.capacity(), 4096u);
}

TEST(ThreadTeamTest, CoversTheRangeOnceAndRethrows) {
  ThreadTeam team(4);
  std::vector<int> hits(1000, 0);
  for (int round = 0; round < 50; ++round)
    team.parallel_for(1000, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
    });
  for (int h : hits) ASSERT_EQ(h, 50);
  EXPECT_THROW(team.parallel_for(8, 1,
                                 [](int64_t b, int64_t) {
                                   if (b > 0) throw InvalidArgument("chunk failed");
                                 }),
               InvalidArgument);
  int calls = 0;
  team.parallel_for(10, 100, [&](int64_t b, int64_t e) { calls += static_cast<int>(e - b); });  // one chunk
  EXPECT_EQ(calls, 10);
}

}  // namespace
}  // namespace lemma::testing

namespace lemma {
namespace {

// The calibration observer (ForwardWorkspace::observe_linear_input) sees each layer's four matmul
// inputs in order with their shapes, layer 0's q/k/v input is attn_norm(embedding), and observing
// changes nothing: the last row's logits are sequence_logits' bits.
TEST(Forward, ObserverSeesEveryLayerInput) {
  const testing::RandomModel rm = testing::make_random_model(testing::small_config(), 17);
  const Model model = rm.build();
  const ModelConfig& c = model.config();
  const std::vector<int32_t> tokens = {3, 9, 27, 1, 14};
  const auto T = static_cast<int64_t>(tokens.size());
  struct Seen {
    int64_t layer;
    LinearInput input;
    int64_t rows, cols;
    std::vector<float> x;
  };
  std::vector<Seen> seen;
  const auto last = observe_sequence(model, tokens, 2, [&](int64_t layer, LinearInput input, std::span<const float> x, int64_t rows, int64_t cols) {
    seen.push_back({layer, input, rows, cols, std::vector<float>(x.begin(), x.end())});
  });
  ASSERT_EQ(seen.size(), static_cast<size_t>(4 * c.num_layers));
  const LinearInput order[] = {LinearInput::kQkv, LinearInput::kO, LinearInput::kGateUp, LinearInput::kDown};
  const int64_t cols[] = {c.hidden_size, c.q_dim(), c.hidden_size, c.intermediate_size};
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].layer, static_cast<int64_t>(i / 4));
    EXPECT_EQ(seen[i].input, order[i % 4]);
    EXPECT_EQ(seen[i].rows, T);
    EXPECT_EQ(seen[i].cols, cols[i % 4]);
    EXPECT_EQ(seen[i].x.size(), static_cast<size_t>(T * cols[i % 4]));
  }
  const auto& embedding = rm.at("model.embed_tokens.weight");
  const auto& norm = rm.at("model.layers.0.input_layernorm.weight");
  const int64_t H = c.hidden_size;
  for (int64_t t = 0; t < T; ++t) {
    const float* e = embedding.data() + tokens[static_cast<size_t>(t)] * H;
    double ss = 0.0;
    for (int64_t j = 0; j < H; ++j) ss += static_cast<double>(e[j]) * e[j];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(H) + c.rms_norm_eps);
    for (int64_t j = 0; j < H; ++j)
      EXPECT_NEAR(seen[0].x[static_cast<size_t>(t * H + j)], e[j] * inv * norm[static_cast<size_t>(j)], 1e-5);
  }
  const auto all = sequence_logits(model, tokens, 2);
  ASSERT_EQ(last.size(), static_cast<size_t>(c.vocab_size));
  for (int64_t v = 0; v < c.vocab_size; ++v)
    EXPECT_EQ(last[static_cast<size_t>(v)], all[static_cast<size_t>((T - 1) * c.vocab_size + v)]);
}

}  // namespace
}  // namespace lemma
