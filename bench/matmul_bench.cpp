// matmul_bench: Google Benchmark microbenchmarks of the matmul kernels on the qwen05b shapes
// (W [N, K] = 896x896 attention, 4864x896 gate/up, 896x4864 down, 151936x896 lm_head) for M = 1
// (decode), 16 and 32 (batched decode) and 512 (prefill), for each weight dtype, precision and ISA
// this machine runs (Q4_K/Q6_K only where K fills their 256-value blocks: down; plus two llama1b-shape
// matrices, Q4_K/Q6_K only, as a Q4_K_M file holds them; Q8_0/Q4_0 random
// codes). `cold:1` cycles over copies of W past the last-level cache, so every call reads W from
// DRAM as a decode step's layers do; `cold:0` reads whatever cache the previous call warmed.
// Counters: GFLOP/s (2 M N K per call) and GB/s (W's bytes per call: the figure to hold against
// `lemma bench roofline` at M = 1). Work is split over N into four equal tiles per thread of a
// ThreadTeam (LEMMA_BENCH_THREADS, default one per CPU; the model uses guided tiles). Weights are
// random, generated once per (dtype, shape), 64-byte aligned.
// Usage: matmul_bench [--benchmark_filter=REGEX] [--benchmark_min_time=0.5]
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <tuple>
#include <vector>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/kernel_set.h"
#include "lemma/kernels/x86/amx/amx_int8.h"
#include "lemma/model/thread_team.h"

namespace {

using lemma::DType;
using lemma::Shape;
using lemma::TensorView;
using lemma::kernels::Isa;
using lemma::kernels::MatmulPrecision;

struct Variant {
  const char* name;
  lemma::kernels::MatrixFormat dtype;
  Isa isa;
  MatmulPrecision precision;
  // A kernel matmul() never picks (the AMX-INT8 ones, see registry.cpp), run in place of the
  // registry's choice for `isa` (which prepares the same activations); needs AMX.
  lemma::kernels::MatmulFn amx_fn = nullptr;
  const char* amx_name = nullptr;
};

// Random weights in `dtype`, kept for the whole run (the lm_head alone is 272 MB in bf16), in
// huge pages where the kernel grants them (as the model's copied weights are).
const TensorView& weights(DType dtype, int64_t N, int64_t K);

const TensorView& weights(lemma::kernels::MatrixFormat format, int64_t N, int64_t K) {
  if (format.interleaved()) {  // the plain blocks, re-laid as Model does at load
    static std::map<std::tuple<DType, int64_t, int64_t>, std::pair<std::unique_ptr<uint8_t[]>, TensorView>> cache;
    auto& slot = cache[{format.dtype, N, K}];
    if (!slot.first) {
      const DType plain = format.dtype;
      const size_t bytes = lemma::kernels::interleaved_bytes(plain, N, K);
      slot.first.reset(new (std::align_val_t{64}) uint8_t[bytes]);
      lemma::kernels::interleave_rows(plain, weights(plain, N, K).data, N, K, slot.first.get());
      slot.second = TensorView{slot.first.get(), plain, Shape{N, K}, lemma::RowLayout::kInterleaved16};
    }
    return slot.second;
  }
  return weights(format.dtype, N, K);
}

const TensorView& weights(DType dtype, int64_t N, int64_t K) {
  static std::map<std::tuple<DType, int64_t, int64_t>, std::pair<std::unique_ptr<uint8_t[]>, TensorView>> cache;
  auto& slot = cache[{dtype, N, K}];
  if (!slot.first) {
    const size_t bytes = *lemma::dtype_bytes(dtype, static_cast<uint64_t>(N * K));
    constexpr size_t kAlign = size_t{2} << 20;
    slot.first.reset(new (std::align_val_t{kAlign}) uint8_t[bytes]);
    madvise(slot.first.get(), bytes, MADV_HUGEPAGE);
    std::mt19937 rng(static_cast<uint32_t>(N * 31 + K));
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    if (dtype == DType::kQ2_K || dtype == DType::kQ3_K || dtype == DType::kQ4_K || dtype == DType::kQ5_K ||
        dtype == DType::kQ6_K || dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ5_0 ||
        dtype == DType::kI8Z32 || dtype == DType::kI4Z32 || dtype == DType::kQ4_1 || dtype == DType::kQ5_1 ||
        dtype == DType::kIQ4_NL || dtype == DType::kIQ4_XS) {
      // Random codes and scales; the f16 d (and dmin) set to small values.
      for (size_t i = 0; i < bytes; ++i) slot.first[i] = static_cast<uint8_t>(rng());
      const size_t block = lemma::dtype_info(dtype).block_bytes;
      for (size_t b = 0; b < bytes / block; ++b) {
        const uint16_t d = lemma::kernels::f32_to_f16(1e-3f);
        const size_t d_at = dtype == DType::kQ6_K ? 208 : dtype == DType::kQ3_K ? 108 : dtype == DType::kQ2_K ? 80 : 0;
        std::memcpy(slot.first.get() + b * block + d_at, &d, 2);
        if (dtype == DType::kQ4_K || dtype == DType::kQ5_K || dtype == DType::kQ2_K || dtype == DType::kQ4_1 || dtype == DType::kQ5_1)
          std::memcpy(slot.first.get() + b * block + d_at + 2, &d, 2);  // dmin / m
      }
    } else {
      for (size_t i = 0; i < static_cast<size_t>(N * K); ++i) {
        const float v = dist(rng);
        if (dtype == DType::kF32) {
          reinterpret_cast<float*>(slot.first.get())[i] = v;
        } else {
          reinterpret_cast<uint16_t*>(slot.first.get())[i] =
              dtype == DType::kF16 ? lemma::kernels::f32_to_f16(v) : lemma::kernels::f32_to_bf16(v);
        }
      }
    }
    slot.second = TensorView{slot.first.get(), dtype, Shape{N, K}};
  }
  return slot.second;
}

lemma::ThreadTeam& team() {
  static lemma::ThreadTeam t([] {
    const char* env = std::getenv("LEMMA_BENCH_THREADS");
    return env != nullptr ? std::atoi(env) : 0;
  }());
  return t;
}

// `copies` copies of w one after the other (huge pages where granted), so that calls cycling over
// them read W from DRAM as the model's layers do, not from a cache the previous call warmed. Owned
// by one benchmark run: a ring is hundreds of MB.
struct ColdRing {
  std::unique_ptr<uint8_t[]> bytes;
  std::vector<TensorView> views;
};
ColdRing cold_ring(const TensorView& w, size_t bytes, int64_t copies) {
  constexpr size_t kAlign = size_t{2} << 20;
  const size_t stride = (bytes + 4095) / 4096 * 4096;
  ColdRing ring;
  ring.bytes.reset(new (std::align_val_t{kAlign}) uint8_t[stride * static_cast<size_t>(copies)]);
  madvise(ring.bytes.get(), stride * static_cast<size_t>(copies), MADV_HUGEPAGE);
  for (int64_t c = 0; c < copies; ++c) {
    uint8_t* copy = ring.bytes.get() + stride * static_cast<size_t>(c);
    std::memcpy(copy, w.data, bytes);
    ring.views.push_back(TensorView{copy, w.dtype, w.shape});
  }
  return ring;
}

void run_matmul(benchmark::State& state, Variant v, int64_t N, int64_t K) {
  const int64_t M = state.range(0);
  const bool cold = state.range(1) != 0;
  if (v.isa > lemma::kernels::detected_isa() || (v.amx_fn != nullptr && !lemma::kernels::cpu_features().amx) ||
      (v.precision == MatmulPrecision::kBf16Activations && !lemma::kernels::cpu_features().avx512_bf16)) {
    state.SkipWithError(v.isa == Isa::kAmx || v.amx_fn != nullptr ? "needs AMX (this CPU has none)" : "this machine cannot run the variant");
    return;
  }
  if (K % lemma::kernels::format_block_values(v.dtype) != 0) {
    state.SkipWithError("K is not a whole number of the dtype's blocks");
    return;
  }
  const TensorView& w = weights(v.dtype, N, K);
  const double bytes = static_cast<double>(*lemma::dtype_bytes(v.dtype.dtype, static_cast<uint64_t>(N * K)));
  // Cold: a ring of copies well past the last-level cache (at least 512 MB, at least 2 copies).
  const ColdRing cold_copies =
      cold ? cold_ring(w, static_cast<size_t>(bytes), std::max<int64_t>(2, static_cast<int64_t>((512e6 + bytes - 1) / bytes)))
           : ColdRing{nullptr, {w}};
  const std::vector<TensorView>& ring = cold_copies.views;
  size_t next = 0;
  std::vector<float> x(static_cast<size_t>(M * K));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& value : x) value = dist(rng);
  std::vector<float> y(static_cast<size_t>(M * N));
  lemma::ThreadTeam& threads = team();
  // One per team thread, as a forward lends them (the AMX kernels stage their panels there).
  std::vector<lemma::kernels::KernelScratch> kernel_scratch(static_cast<size_t>(threads.size()));
  const Isa scratch_isa = v.amx_fn != nullptr ? Isa::kAmx : v.isa;  // grown before the timed calls
  for (auto& s : kernel_scratch) s.reserve(lemma::kernels::kernel_set(scratch_isa).scratch_bytes());
  // layers::linear's split: whole 16-row tiles, at least ~64K multiply-adds, about 4 per thread.
  const int64_t min_rows = std::max<int64_t>(16, (int64_t{1} << 16) / std::max<int64_t>(M * K, 1));
  const int64_t per_thread = (N + 4 * threads.size() - 1) / (4 * threads.size());
  const int64_t rows_per_tile = (std::max(min_rows, per_thread) + 15) / 16 * 16;
  for (auto _ : state) {
    lemma::kernels::MatmulPlan plan =
        lemma::kernels::plan_matmul(x.data(), K, M, ring[next], y.data(), N, nullptr, {v.isa, v.precision});
    next = (next + 1) % ring.size();
    if (v.amx_fn != nullptr) plan.fn = v.amx_fn;
    lemma::kernels::ActivationBuffer buffer;
    lemma::kernels::prepare_activations(std::span(&plan, 1), buffer);
    threads.parallel_tiles((N + rows_per_tile - 1) / rows_per_tile, 1, [&](int64_t t0, int64_t t1, int worker) {
      for (int64_t t = t0; t < t1; ++t)
        plan.run_rows(t * rows_per_tile, std::min(N, (t + 1) * rows_per_tile), &kernel_scratch[static_cast<size_t>(worker)]);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(M * N * K);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(v.amx_name != nullptr ? std::string(v.amx_name)
                                        : std::string(lemma::kernels::kernel_name_for(v.dtype, K, v.isa, v.precision)));
}

const Variant kVariants[] = {
    {"bf16_dpbf16", DType::kBF16, Isa::kAvx512, MatmulPrecision::kBf16Activations},
    {"bf16x16_dpbf16", kernels::interleaved(DType::kBF16), Isa::kAvx512, MatmulPrecision::kBf16Activations},
    {"bf16_f32act_avx512", DType::kBF16, Isa::kAvx512, MatmulPrecision::kF32Activations},
    {"bf16_avx2", DType::kBF16, Isa::kAvx2, MatmulPrecision::kF32Activations},
    {"f16_avx512", DType::kF16, Isa::kAvx512, MatmulPrecision::kF32Activations},
    {"f16x16_avx512", kernels::interleaved(DType::kF16), Isa::kAvx512, MatmulPrecision::kF32Activations},
    {"f16x16_avx2", kernels::interleaved(DType::kF16), Isa::kAvx2, MatmulPrecision::kF32Activations},
    {"f32_avx512", DType::kF32, Isa::kAvx512, MatmulPrecision::kF32Activations},
    {"q8_0_int8_avx512", DType::kQ8_0, Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q4_0_int8_avx512", DType::kQ4_0, Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q8_0x16_int8_avx512", kernels::interleaved(DType::kQ8_0), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q4_0x16_int8_avx512", kernels::interleaved(DType::kQ4_0), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q5_0_int8_avx512", DType::kQ5_0, Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q5_0x16_int8_avx512", kernels::interleaved(DType::kQ5_0), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    // AMX tiles (x86/amx/); skipped on machines without AMX.
    {"q8_0x16_int8_amx", kernels::interleaved(DType::kQ8_0), Isa::kAvx512, MatmulPrecision::kInt8Activations,
     lemma::kernels::x86::matmul_q8_0x16_int8_amx, "amx_q8_0x16_int8"},
    {"q4_0x16_int8_amx", kernels::interleaved(DType::kQ4_0), Isa::kAvx512, MatmulPrecision::kInt8Activations,
     lemma::kernels::x86::matmul_q4_0x16_int8_amx, "amx_q4_0x16_int8"},
    {"q5_0x16_int8_amx", kernels::interleaved(DType::kQ5_0), Isa::kAvx512, MatmulPrecision::kInt8Activations,
     lemma::kernels::x86::matmul_q5_0x16_int8_amx, "amx_q5_0x16_int8"},
    {"bf16x16_amx", kernels::interleaved(DType::kBF16), Isa::kAmx, MatmulPrecision::kBf16Activations},
    {"q4_k_int8_avx512", DType::kQ4_K, Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q4_kx16_int8_avx512", kernels::interleaved(DType::kQ4_K), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q4_k_f32act_avx512", DType::kQ4_K, Isa::kAvx512, MatmulPrecision::kF32Activations},
    {"q2_k_int8_avx512", DType::kQ2_K, Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q2_kx16_int8_avx512", kernels::interleaved(DType::kQ2_K), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q3_k_int8_avx512", DType::kQ3_K, Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q3_kx16_int8_avx512", kernels::interleaved(DType::kQ3_K), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q5_k_int8_avx512", DType::kQ5_K, Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q5_kx16_int8_avx512", kernels::interleaved(DType::kQ5_K), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q6_k_int8_avx512", DType::kQ6_K, Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q6_kx16_int8_avx512", kernels::interleaved(DType::kQ6_K), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q6_k_f32act_avx512", DType::kQ6_K, Isa::kAvx512, MatmulPrecision::kF32Activations},
    // IQ4_NL / IQ4_XS and Q4_1 / Q5_1: file order (f32 x) beside interleaved (int8 x).
    {"iq4_nl_f32act_avx512", DType::kIQ4_NL, Isa::kAvx512, MatmulPrecision::kF32Activations},
    {"iq4_nlx16_int8_avx512", kernels::interleaved(DType::kIQ4_NL), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"iq4_xsx16_int8_avx512", kernels::interleaved(DType::kIQ4_XS), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q4_1x16_int8_avx512", kernels::interleaved(DType::kQ4_1), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"q5_1x16_int8_avx512", kernels::interleaved(DType::kQ5_1), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    // lemma int8/int4 with zero points (GPTQ, AWQ, lemma int): file order (f32 x) beside interleaved (int8 x).
    {"i4z32_f32act_avx512", DType::kI4Z32, Isa::kAvx512, MatmulPrecision::kF32Activations},
    {"i4z32x16_int8_avx512", kernels::interleaved(DType::kI4Z32), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    {"i8z32_f32act_avx512", DType::kI8Z32, Isa::kAvx512, MatmulPrecision::kF32Activations},
    {"i8z32x16_int8_avx512", kernels::interleaved(DType::kI8Z32), Isa::kAvx512, MatmulPrecision::kInt8Activations},
    // AVX2 (CPUs without AVX-512): GGUF order beside the interleaved kernels.
    {"q8_0_int8_avx2", DType::kQ8_0, Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q8_0x16_int8_avx2", kernels::interleaved(DType::kQ8_0), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q4_0_int8_avx2", DType::kQ4_0, Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q4_0x16_int8_avx2", kernels::interleaved(DType::kQ4_0), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q5_0x16_int8_avx2", kernels::interleaved(DType::kQ5_0), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q4_k_int8_avx2", DType::kQ4_K, Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q4_kx16_int8_avx2", kernels::interleaved(DType::kQ4_K), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q6_k_int8_avx2", DType::kQ6_K, Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q6_kx16_int8_avx2", kernels::interleaved(DType::kQ6_K), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q5_kx16_int8_avx2", kernels::interleaved(DType::kQ5_K), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q2_kx16_int8_avx2", kernels::interleaved(DType::kQ2_K), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q3_kx16_int8_avx2", kernels::interleaved(DType::kQ3_K), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"i4z32x16_int8_avx2", kernels::interleaved(DType::kI4Z32), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"i8z32x16_int8_avx2", kernels::interleaved(DType::kI8Z32), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"iq4_nlx16_int8_avx2", kernels::interleaved(DType::kIQ4_NL), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"iq4_xsx16_int8_avx2", kernels::interleaved(DType::kIQ4_XS), Isa::kAvx2, MatmulPrecision::kInt8Activations},
    {"q4_1x16_int8_avx2", kernels::interleaved(DType::kQ4_1), Isa::kAvx2, MatmulPrecision::kInt8Activations},
};

struct MatrixShape {
  const char* name;
  int64_t N, K;
  bool k_quants_only;  // llama1b-shape: every matrix fills 256-value blocks (a Q4_K_M file's layout)
};
const MatrixShape kShapes[] = {{"attn_896x896", 896, 896, false},
                               {"gate_up_4864x896", 4864, 896, false},
                               {"down_896x4864", 896, 4864, false},
                               {"lm_head_151936x896", 151936, 896, false},
                               {"llama1b_down_2048x8192", 2048, 8192, true},
                               {"llama1b_lm_head_128256x2048", 128256, 2048, true}};

bool is_k_quant(lemma::kernels::MatrixFormat t) {
  const DType plain = t.dtype;
  return plain == DType::kQ2_K || plain == DType::kQ3_K || plain == DType::kQ4_K || plain == DType::kQ5_K || plain == DType::kQ6_K ||
         plain == DType::kIQ4_XS;
}

const bool kRegistered = [] {
  for (const MatrixShape& s : kShapes) {
    for (const Variant& v : kVariants) {
      if (s.k_quants_only && !is_k_quant(v.dtype)) continue;
      if (s.K % lemma::kernels::format_block_values(v.dtype) != 0) continue;  // IQ4_XS at K = 896
      auto* b = benchmark::RegisterBenchmark((std::string(v.name) + "/" + s.name).c_str(), run_matmul, v, s.N, s.K);
      // cold:1 reads W from DRAM every call (decode's case), cold:0 from whatever cache holds it.
      b->ArgNames({"M", "cold"})->Args({1, 0})->Args({1, 1})->Args({16, 0})->Args({32, 0})->Args({32, 1})->Args({512, 0});
      // Interleaved Q*_0 int8: where the AMX-INT8 kernel overtakes VNNI (registry.cpp, kAmxQ8MinRows and
      // kAmxNibbleMinRows).
      if (std::string_view(v.name).find("_0x16_int8") != std::string_view::npos) b->Args({64, 1})->Args({128, 1})->Args({256, 1});
      b->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
