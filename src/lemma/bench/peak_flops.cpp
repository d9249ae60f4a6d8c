#include "lemma/bench/peak_flops.h"

#include <algorithm>
#include <atomic>

#include "lemma/base/error.h"
#include "lemma/bench/pinned_threads.h"
#include "lemma/bench/x86/probes.h"
#include "lemma/kernels/isa.h"

namespace lemma::bench {

namespace {
using ProbeFn = float (*)(int64_t);

double best_gflops(const PeakFlopsOptions& options, ProbeFn fn, int64_t flops_per_iteration) {
  std::atomic<int64_t> sink{0};  // the chains' results land here, so they are never dead code
  ParallelPasses job;
  job.num_threads = options.num_threads;
  job.passes = options.passes;
  job.body = [&](int) { sink.fetch_add(static_cast<int64_t>(fn(options.iterations)), std::memory_order_relaxed); };
  const std::vector<double> seconds = run_parallel_passes(job);
  const double best = *std::min_element(seconds.begin(), seconds.end());
  const double flops = static_cast<double>(options.iterations) * static_cast<double>(flops_per_iteration) *
                       static_cast<double>(options.num_threads);
  return flops / 1e9 / best;
}
}  // namespace

std::vector<FlopsProbe> measure_peak_flops(const PeakFlopsOptions& options) {
  if (options.num_threads < 1 || options.passes < 1 || options.iterations < 1) {
    throw InvalidArgument("peak FLOP/s probe needs >= 1 thread, pass and iteration");
  }
  const auto& cpu = kernels::cpu_features();
  std::vector<FlopsProbe> probes;
  if (cpu.avx2) probes.push_back({"f32_fma_avx2", best_gflops(options, x86::fma_f32_avx2, x86::kFmaAvx2FlopsPerIteration)});
  if (cpu.avx512) {
    probes.push_back({"f32_fma_avx512", best_gflops(options, x86::fma_f32_avx512, x86::kFmaAvx512FlopsPerIteration)});
  }
  if (cpu.avx512 && cpu.avx512_bf16) {
    probes.push_back(
        {"bf16_dot_avx512bf16", best_gflops(options, x86::dot_bf16_avx512, x86::kDotBf16FlopsPerIteration)});
  }
  if (cpu.avx512 && cpu.avx512_vnni) {
    probes.push_back({"int8_dot_avx512vnni", best_gflops(options, x86::dot_int8_avx512vnni, x86::kDotInt8OpsPerIteration)});
  }
  if (cpu.amx) probes.push_back({"bf16_tile_amx", best_gflops(options, x86::dot_bf16_amx, x86::kDotBf16AmxFlopsPerIteration)});
  return probes;
}

}  // namespace lemma::bench
