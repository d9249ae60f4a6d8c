// The inner loops of the machine probes, one file per ISA compiled with its own flags (like the
// kernels). Callers check kernels::cpu_features() before calling an ISA's function. Each returns a
// value derived from everything it touched so the compiler cannot drop the work. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lemma::bench::x86 {

// Sums `bytes` bytes at `data` (64-byte aligned, bytes a multiple of 256) as 64-bit lanes.
uint64_t read_sum_scalar(const void* data, size_t bytes);
uint64_t read_sum_avx2(const void* data, size_t bytes);

// `iterations` rounds of independent register-only FMAs; flops_per_iteration says how many FLOPs
// (a multiply-add counts two) one round does.
float fma_f32_avx2(int64_t iterations);
float fma_f32_avx512(int64_t iterations);
float dot_bf16_avx512(int64_t iterations);  // vdpbf16ps (AVX512_BF16)
float dot_int8_avx512vnni(int64_t iterations);    // vpdpbusd (AVX512_VNNI); integer ops counted as FLOPs
// TDPBF16PS on four 16 x 16 f32 C tiles (AMX-BF16): one round of four per kAmxIterationsPerRound
// iterations (a round takes as long as ~16 rounds of the vector chains).
float dot_bf16_amx(int64_t iterations);

inline constexpr int64_t kFmaAvx2FlopsPerIteration = 10 * 8 * 2;     // 10 chains x 8 lanes
inline constexpr int64_t kFmaAvx512FlopsPerIteration = 12 * 16 * 2;  // 12 chains x 16 lanes
inline constexpr int64_t kDotBf16FlopsPerIteration = 12 * 32 * 2;    // 12 chains x 32 bf16 pairs
inline constexpr int64_t kDotInt8OpsPerIteration = 12 * 64 * 2;      // 12 chains x 64 byte products
inline constexpr int64_t kAmxIterationsPerRound = 16;
inline constexpr int64_t kDotBf16AmxFlopsPerIteration = 4 * 16 * 16 * 32 * 2 / kAmxIterationsPerRound;  // 4 tiles

}  // namespace lemma::bench::x86
