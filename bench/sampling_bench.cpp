// sampling_bench: what one Sampler::sample call costs over a vocabulary-sized row of logits
// (151936 entries, qwen2's vocabulary), for the sampling settings requests commonly carry: greedy,
// plain temperature (the OpenAI default, temperature 1), top_p, top_k and min_p. A serving step
// samples once per running sequence, so at 32 sequences this cost is paid 32 times per step.
// Counter: tokens/s (samples per second) on one thread.
// Usage: sampling_bench [--benchmark_filter=REGEX]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "lemma/sampling/sampler.h"

namespace {

constexpr int64_t kVocab = 151936;

// Logits shaped like a language model's: a few strong candidates over a broad Gaussian floor.
std::vector<float> model_like_logits() {
  std::vector<float> logits(kVocab);
  std::mt19937 rng(11);
  std::normal_distribution<float> floor(0.0f, 2.0f);
  for (float& v : logits) v = floor(rng);
  for (int i = 0; i < 20; ++i) logits[static_cast<size_t>(rng() % kVocab)] = 12.0f + static_cast<float>(i) * 0.3f;
  return logits;
}

void run_sampler(benchmark::State& state, lemma::SamplingParams params) {
  const std::vector<float> logits = model_like_logits();
  lemma::Sampler sampler(params, 1234);
  const std::vector<int32_t> prompt = {1, 2, 3};
  int64_t step = 0;
  for (auto _ : state) {
    sampler.seek(static_cast<uint64_t>(step++));
    benchmark::DoNotOptimize(sampler.sample(logits, prompt, {}).token);
  }
  state.counters["tokens/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
}

lemma::SamplingParams with(float temperature, float top_p, int32_t top_k, float min_p) {
  lemma::SamplingParams p;
  p.temperature = temperature;
  p.top_p = top_p;
  p.top_k = top_k;
  p.min_p = min_p;
  return p;
}

const bool kRegistered = [] {
  benchmark::RegisterBenchmark("greedy", run_sampler, with(0.0f, 1.0f, 0, 0.0f))->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("temperature_1", run_sampler, with(1.0f, 1.0f, 0, 0.0f))->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("temperature_0.7_top_p_0.9", run_sampler, with(0.7f, 0.9f, 0, 0.0f))->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("top_k_40", run_sampler, with(1.0f, 1.0f, 40, 0.0f))->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("min_p_0.05", run_sampler, with(1.0f, 1.0f, 0, 0.05f))->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
