// decode_plan_bench: what a captured decode plan (G15) saves per decode step. Plans the matmul
// groups of one qwen05b-shaped forward (24 layers x {q/k/v, o, gate/up, down} + lm_head, bf16
// weights, a team of two) as every forward does without replay, and replays them from a
// DecodePlanCache, for M = 1 and 8. Planning reads only shapes and dtypes, so the weights are
// views over one small buffer (never run). Usage: decode_plan_bench [--benchmark_filter=REGEX]
#include <benchmark/benchmark.h>

#include <vector>

#include "lemma/model/decode_plans.h"
#include "lemma/model/thread_team.h"

namespace {

using lemma::DecodePlanCache;
using lemma::DType;
using lemma::Shape;
using lemma::TensorView;
using lemma::layers::LinearOutput;

constexpr int64_t kLayers = 24, kHidden = 896, kKv = 128, kFfn = 4864, kVocab = 151936, kMaxM = 8;

struct Step {
  std::vector<uint16_t> weights = std::vector<uint16_t>(64);  // every view points here: never read
  std::vector<float> x = std::vector<float>(kMaxM * kFfn), y = std::vector<float>(kMaxM * kVocab);
  TensorView view(int64_t n, int64_t k) { return TensorView{weights.data(), DType::kBF16, Shape{n, k}}; }
  TensorView q = view(kHidden, kHidden), k = view(kKv, kHidden), v = view(kKv, kHidden), o = view(kHidden, kHidden),
             gate = view(kFfn, kHidden), up = view(kFfn, kHidden), down = view(kHidden, kFfn), head = view(kVocab, kHidden);
  lemma::ThreadTeam team{2};

  // The forward's matmul groups in slot order, each through `plan`.
  template <typename Plan>
  void for_each_group(int64_t M, Plan&& plan) {
    const LinearOutput qkv[] = {{&q, {}, y}, {&k, {}, y}, {&v, {}, y}}, out[] = {{&o, {}, y}};
    const LinearOutput gate_up[] = {{&gate, {}, y}, {&up, {}, y}}, down_out[] = {{&down, {}, y}};
    const LinearOutput head_out[] = {{&head, {}, y}};
    size_t slot = 0;
    for (int64_t l = 0; l < kLayers; ++l) {
      plan(slot++, M, std::span<const LinearOutput>(qkv));
      plan(slot++, M, std::span<const LinearOutput>(out));
      plan(slot++, M, std::span<const LinearOutput>(gate_up));
      plan(slot++, M, std::span<const LinearOutput>(down_out));
    }
    plan(slot++, M, std::span<const LinearOutput>(head_out));
  }
};

void BM_PlanEveryMatmul(benchmark::State& state) {
  Step s;
  const int64_t M = state.range(0);
  for (auto _ : state) {
    s.for_each_group(M, [&](size_t, int64_t m, std::span<const LinearOutput> outputs) {
      benchmark::DoNotOptimize(lemma::layers::plan_linear_group(s.x, m, outputs, &s.team));
    });
  }
  state.counters["groups"] = kLayers * 4 + 1;
}

void BM_ReplayCapturedPlans(benchmark::State& state) {
  Step s;
  const int64_t M = state.range(0);
  DecodePlanCache cache;
  cache.enabled = true;
  const DecodePlanCache::Key key{1, &s.team, M, M, {s.x.data(), s.y.data()}};
  const size_t slots = kLayers * 4 + 1;
  for (int i = 0; i < 2; ++i) {  // capture, then check that it replays
    DecodePlanCache::Step step = cache.begin(key, slots);
    s.for_each_group(M, [&](size_t slot, int64_t m, std::span<const LinearOutput> outputs) {
      step.plan(slot, s.x, m, outputs, &s.team);
    });
    step.commit();
  }
  if (cache.replays() != 1) state.SkipWithError("the cache did not replay");
  for (auto _ : state) {
    DecodePlanCache::Step step = cache.begin(key, slots);
    s.for_each_group(M, [&](size_t slot, int64_t m, std::span<const LinearOutput> outputs) {
      benchmark::DoNotOptimize(&step.plan(slot, s.x, m, outputs, &s.team));
    });
  }
}

BENCHMARK(BM_PlanEveryMatmul)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReplayCapturedPlans)->Arg(1)->Arg(8)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
