// Peak arithmetic throughput in registers: every thread (pinned) runs independent FMA chains that
// never touch memory; the best of a few passes is reported per instruction family the CPU has:
// f32 FMA with AVX2 and AVX-512, the AVX512_BF16 dot product (vdpbf16ps) and the AVX512_VNNI int8 dot
// product (vpdpbusd; its integer multiply-adds counted as 2 ops, like FLOPs), and AMX-BF16's
// TDPBF16PS on four C tiles (where the CPU has AMX and Linux granted the tile state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemma::bench {

struct FlopsProbe {
  std::string name;     // "f32_fma_avx2", "f32_fma_avx512", "bf16_dot_avx512bf16", "int8_dot_avx512vnni", "bf16_tile_amx"
  double gflops = 0.0;  // 1 GFLOP = 1e9 floating-point operations (a multiply-add counts two)
};

struct PeakFlopsOptions {
  int num_threads = 1;
  int passes = 3;
  int64_t iterations = int64_t{1} << 24;  // per thread and pass (about 0.1 s on a 3 GHz core)
};

// One entry per probe this CPU can run, in the order above; empty on a CPU without AVX2.
std::vector<FlopsProbe> measure_peak_flops(const PeakFlopsOptions& options);

}  // namespace lemma::bench
