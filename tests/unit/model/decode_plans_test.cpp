// Captured decode plans (G15): a forward that replays the plans captured for its row count gives
// the bits of one that plans every matrix (LEMMA_DECODE_PLANS=0), over several steps, batch sizes,
// thread counts and weight dtypes (f32, and bf16 whose kernels read a prepared copy of x); plans
// are captured again when a buffer moved, the logits buffer changed or another model runs.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>

#include "lemma/kernels/convert.h"
#include "random_model.h"

namespace lemma::testing {
namespace {

constexpr int64_t kBlockSize = 8;

// Big enough that the matmuls split into tiles over a team of two.
ModelConfig plan_config() {
  ModelConfig c = small_config();
  c.vocab_size = 300;
  c.hidden_size = 128;
  c.intermediate_size = 256;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.rope.rotary_dim = 16;
  return c;
}

// The random model with its matrices stored as bf16.
Model build_bf16(const RandomModel& rm) {
  auto bf16 = std::make_shared<std::map<std::string, std::vector<uint16_t>>>();
  for (const auto& [name, values] : *rm.tensors) {
    if (rm.shapes.at(name).rank != 2) continue;
    auto& out = (*bf16)[name];
    out.resize(values.size());
    kernels::convert_f32_to_bf16(values.data(), out.data(), static_cast<int64_t>(values.size()));
  }
  auto f32 = rm.tensors;
  auto shapes = rm.shapes;
  TensorLookup lookup = [f32, bf16, shapes](const std::string& name) -> std::optional<TensorView> {
    if (auto it = bf16->find(name); it != bf16->end()) return TensorView{it->second.data(), DType::kBF16, shapes.at(name)};
    if (auto it = f32->find(name); it != f32->end()) return TensorView{it->second.data(), DType::kF32, shapes.at(name)};
    return std::nullopt;
  };
  auto owner = std::make_shared<std::pair<decltype(f32), decltype(bf16)>>(f32, bf16);
  return Model::from_tensors(rm.config, WeightFormat::kHf, lookup, owner);
}

// `batch` sequences with prompts of different lengths, then `steps` decode steps of one token
// each; returns every step's logits, one after the other.
struct Decode {
  const Model& model;
  ForwardWorkspace ws;
  KvCache cache;
  ForwardBatch batch;
  std::vector<int32_t> next;
  std::vector<std::vector<int32_t>> prompts, tables;
  std::vector<float> logits;

  Decode(const Model& m, int threads, int64_t num_sequences, bool plans)
      : model(m), ws(threads), cache(KvCache::for_model(m.config(), 256, kBlockSize)) {
    ws.decode_plans.enabled = plans;
    const int64_t vocab = m.config().vocab_size;
    next.assign(static_cast<size_t>(num_sequences), 0);
    prompts.resize(static_cast<size_t>(num_sequences));
    tables.resize(static_cast<size_t>(num_sequences));
    for (int64_t s = 0; s < num_sequences; ++s) {
      auto& p = prompts[static_cast<size_t>(s)];
      for (int64_t i = 0; i < 5 + 3 * s; ++i) p.push_back(static_cast<int32_t>((i * 7 + s * 11 + 3) % vocab));
      for (int64_t b = 0; b < 8; ++b) tables[static_cast<size_t>(s)].push_back(static_cast<int32_t>(s * 8 + b));
      batch.sequences.push_back({p, 0, tables[static_cast<size_t>(s)], LogitsRequest::kLast});
    }
    logits.resize(static_cast<size_t>(num_sequences * vocab));
    model.forward(batch, cache, ws, logits);
    for (int64_t s = 0; s < num_sequences; ++s) {
      auto& seq = batch.sequences[static_cast<size_t>(s)];
      seq.num_cached = static_cast<int64_t>(prompts[static_cast<size_t>(s)].size());
      seq.token_ids = std::span<const int32_t>(next).subspan(static_cast<size_t>(s), 1);
    }
  }

  // One decode step into `out` (default: the usual logits buffer); returns its logits.
  std::vector<float> step(std::span<float> out = {}) {
    if (out.empty()) out = logits;
    model.forward(batch, cache, ws, out);
    const size_t rows = batch.sequences.size();
    for (size_t s = 0; s < rows; ++s) {
      next[s] = static_cast<int32_t>((next[s] * 13 + 5 + static_cast<int32_t>(s)) % model.config().vocab_size);
      ++batch.sequences[s].num_cached;
    }
    return {out.begin(), out.begin() + static_cast<std::ptrdiff_t>(rows * static_cast<size_t>(model.config().vocab_size))};
  }
};

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << what;
}

TEST(DecodePlans, ReplayIsBitwiseThePlannedPath) {
  const RandomModel rm = make_random_model(plan_config(), 5);
  const Model f32 = rm.build();
  const Model bf16 = build_bf16(rm);
  for (const Model* model : {&f32, &bf16}) {
    for (int threads : {1, 2}) {
      for (int64_t batch : {1, 3, 8}) {
        const std::string what = std::string(model == &f32 ? "f32" : "bf16") + " threads=" + std::to_string(threads) +
                                 " batch=" + std::to_string(batch);
        Decode planned(*model, threads, batch, false), replayed(*model, threads, batch, true);
        for (int i = 0; i < 5; ++i) expect_same_bits(replayed.step(), planned.step(), what + " step " + std::to_string(i));
        EXPECT_EQ(planned.ws.decode_plans.captures() + planned.ws.decode_plans.replays(), 0) << what;
        EXPECT_EQ(replayed.ws.decode_plans.replays(), 4) << what;  // the first step captured
      }
    }
  }
}

TEST(DecodePlans, MovedBuffersAndOtherLogitsArePlannedAgain) {
  const RandomModel rm = make_random_model(plan_config(), 9);
  const Model model = rm.build();
  Decode planned(model, 2, 2, false), replayed(model, 2, 2, true);
  for (int i = 0; i < 2; ++i) expect_same_bits(replayed.step(), planned.step(), "warm-up");
  const int64_t captures = replayed.ws.decode_plans.captures();
  // Growing the workspace moves its buffers: the stored plans point at the freed ones.
  replayed.ws.reserve(model.config(), 400, 400, 64);
  expect_same_bits(replayed.step(), planned.step(), "after the buffers moved");
  EXPECT_EQ(replayed.ws.decode_plans.captures(), captures + 1);
  // Another logits buffer: the head's plan writes elsewhere.
  std::vector<float> other(replayed.logits.size());
  expect_same_bits(replayed.step(other), planned.step(), "other logits buffer");
  EXPECT_EQ(replayed.ws.decode_plans.captures(), captures + 2);
  const int64_t replays = replayed.ws.decode_plans.replays();
  expect_same_bits(replayed.step(other), planned.step(), "replayed over the new buffers");
  EXPECT_EQ(replayed.ws.decode_plans.replays(), replays + 1);
}

TEST(DecodePlans, RowCountsKeepTheirOwnPlans) {
  const RandomModel rm = make_random_model(plan_config(), 13);
  const Model model = rm.build();
  Decode planned(model, 2, 3, false), replayed(model, 2, 3, true);
  // Alternate 3 sequences and 1 (the others sit out a step): two entries, each replayed.
  for (int i = 0; i < 6; ++i) {
    for (Decode* d : {&planned, &replayed}) {
      d->batch.sequences.resize(i % 2 == 0 ? 3 : 1, d->batch.sequences.front());
      if (i % 2 == 0)
        for (size_t s = 1; s < 3; ++s) {
          d->batch.sequences[s].block_table = d->tables[s];
          d->batch.sequences[s].num_cached = static_cast<int64_t>(d->prompts[s].size()) + i / 2;
          d->batch.sequences[s].token_ids = std::span<const int32_t>(d->next).subspan(s, 1);
        }
    }
    expect_same_bits(replayed.step(), planned.step(), "step " + std::to_string(i));
  }
  EXPECT_EQ(replayed.ws.decode_plans.replays(), 4);  // steps 2..5; steps 0 and 1 captured M=3 and M=1
}

TEST(DecodePlans, AnotherModelOnTheSameWorkspaceIsPlannedAgain) {
  const RandomModel ra = make_random_model(plan_config(), 21), rb = make_random_model(plan_config(), 22);
  const Model a = ra.build(), b = rb.build();
  Decode on_a(a, 1, 2, true);
  on_a.step();
  on_a.step();
  Decode fresh_b(b, 1, 2, false);
  // The same workspace (buffers unchanged, so only the model differs) now runs b's prefill and steps.
  Decode on_b(b, 1, 2, true);
  std::swap(on_b.ws, on_a.ws);
  const int64_t captures = on_b.ws.decode_plans.captures();
  expect_same_bits(on_b.step(), fresh_b.step(), "first step of b");
  EXPECT_EQ(on_b.ws.decode_plans.captures(), captures + 1);
  expect_same_bits(on_b.step(), fresh_b.step(), "second step of b");
}

}  // namespace
}  // namespace lemma::testing
