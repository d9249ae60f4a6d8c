// Pieces the interleaved-weight kernels share (interleaved_blocks.h): the 16-row groups' first
// superblocks, W's stream prefetch, x's 4-code broadcasts and the masked store of a register tile's outputs (+ bias).
// Included only by per-ISA sources compiled with AVX-512; `static inline` keeps each copy local to
// its object file (see horizontal_sum.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels::x86 {

// Groups g0 .. g0 + G - 1 of W, each `blocks` superblocks of `super_bytes`.
template <int G>
static inline void group_starts(const MatmulArgs& a, int64_t g0, int64_t blocks, int64_t super_bytes, const uint8_t* group[G]) {
  for (int g = 0; g < G; ++g) group[g] = static_cast<const uint8_t*>(a.w) + (g0 + g) * blocks * super_bytes;
}

// Software prefetch of W for the interleaved kernels: each group of 16 rows is one forward stream,
// prefetched 1 KiB ahead of the bytes being read. Measured on qwen05b-shape decode (2 threads):
// prefetching the next register tile's groups instead (tens to hundreds of KiB ahead, past L1) was
// 10-15% slower for bf16x16 and Q8_0x16; 1, 1.5 and 2 KiB ahead were alike. Past a group's end it
// reaches into the next group, which another accumulator or the next tile reads.
constexpr int64_t kStreamPrefetchBytes = 1024;
static inline void prefetch_stream(const void* reading, int64_t bytes) {
  const char* ahead = static_cast<const char*>(reading) + kStreamPrefetchBytes;
  for (int64_t line = 0; line < bytes; line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
}

// 4 signed codes of x as one int32 (for a broadcast vpdpbusd operand).
static inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// y rows m0.. and the outputs of groups g0.., the last group masked to N (+ bias, one add).
template <int R, int G>
static inline void store_tile(const MatmulArgs& a, int64_t m0, int64_t g0, const __m512 (&acc)[R][G]) {
  for (int g = 0; g < G; ++g) {
    const int64_t n0 = (g0 + g) * kInterleaveRows;
    const int64_t valid = a.N - n0 < kInterleaveRows ? a.N - n0 : kInterleaveRows;
    const auto mask = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512 bias = a.bias != nullptr ? _mm512_maskz_loadu_ps(mask, a.bias + n0) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) {
      const __m512 y = a.bias != nullptr ? _mm512_add_ps(acc[r][g], bias) : acc[r][g];
      _mm512_mask_storeu_ps(a.y + (m0 + r) * a.y_stride + n0, mask, y);
    }
  }
}

}  // namespace lemma::kernels::x86
