// llama-bench-style model throughput: "pp<P>" is one forward of P prompt tokens into an empty
// cache; "tg<N>" is N single-token decode steps from an empty cache, each step one forward of
// `batch` sequences (one new token each, every sequence with its own block table). With a depth
// D > 0 (llama-bench's -d), every sequence first holds D context tokens (prefilled once, untimed)
// and the tests run after them ("pp<P>@d<D>", "tg<N>@d<D>"), so attention reads D more keys. Token ids are
// seeded pseudo-random, as llama-bench's. Before any timing the outputs are checked (logits finite
// and not all equal) and each phase is warmed up once; then `reps` timed repetitions. After the
// timed tg repetitions, one more (untimed) tg run is traced to measure the per-step framework
// overhead (step time outside kernel ranges, see step_overhead.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lemma/bench/statistics.h"
#include "lemma/bench/step_overhead.h"
#include "lemma/model/model.h"

namespace lemma::bench {

struct ModelBenchOptions {
  int64_t prompt_tokens = 512;  // pp; 0 skips the prefill test
  int64_t gen_tokens = 128;     // tg; 0 skips the decode test
  int reps = 3;
  int num_threads = 1;
  int64_t batch = 1;            // sequences decoded together in tg
  uint64_t seed = 42;
  KvDtype kv_dtype = KvDtype::kF32;  // KV cache element type (G23)
  int64_t depth = 0;            // context tokens already cached before each test
  // Tokens each sequence feeds per tg step, with logits for every one (> 1: a speculative
  // verification step of 1 + drafts; the test is named "tg<N>x<S>"). tokens_per_rep counts them all.
  int64_t step_tokens = 1;
  // When set, read before the first timed tg repetition and after each one (see decode_roofline.h);
  // returns GB/s. Not timed.
  std::function<double()> read_bandwidth = nullptr;
  // LoRA adapters (G29): sequence b runs on loras[b % size] in every test (the prefill's is
  // loras[0]); empty: the base model.
  std::vector<const LoraAdapter*> loras = {};
};

struct PhaseResult {
  std::string test;             // "pp512", "tg128", "tg128@d2048"
  int64_t batch = 1;
  int64_t tokens_per_rep = 0;   // tokens processed per repetition, all sequences together
  std::vector<double> seconds;  // one per repetition
  Summary tokens_per_s;         // over repetitions
  StepOverhead overhead;        // tg only: from the traced run ("decode_step" ranges)
  std::vector<double> bandwidth_gbps;  // tg with read_bandwidth set: reps + 1 readings around the reps
  // tg of a MoE model (G27): experts run per step, summed over the MoE layers, mean over the timed
  // reps' steps (what a step streams of the experts: the routed-bytes roofline). 0 for dense models.
  double moe_active_experts = 0.0;
};

// Called before each phase's warm-up and each repetition ("pp512 warm-up", "tg128 rep 2/3"), and
// while the depth is filled.
using BenchProgress = std::function<void(const std::string& what)>;

// How many times run_model_bench calls `progress` with these options: a progress line's total.
int64_t model_bench_steps(const ModelBenchOptions& options);

// Throws InvalidArgument for bad options, Error when the model's outputs fail the check.
std::vector<PhaseResult> run_model_bench(const Model& model, const ModelBenchOptions& options,
                                         const BenchProgress& progress = {});

}  // namespace lemma::bench
