// Interleaved bf16x16 weights x bf16 activations with AVX512_BF16 (interleaved_blocks.h). For each
// pair of values c, one vdpbf16ps multiplies a 64-byte chunk (16 rows' pairs) by x's pair broadcast
// from memory: 16 outputs per instruction, no horizontal sums, and W read as one forward stream per
// group of 16 rows. Each output is one lane of one accumulator fed pairs in k order: exactly the
// reference's (SDM) sequence, whatever tile, cache block or M it runs in.
// Register tiles: up to R rows of x by G groups (4 x 4 for M <= 4, 8 x 3 otherwise: 24 accumulators,
// 3 W vectors, x broadcast from memory). Blocks of groups stay in L2 while every tile of x rows
// passes over them (prefetching: Fetch below).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/vec/vec_avx512.h"
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

using Vec = VecAvx512;

// What a tile prefetches besides its own reads: its own streams ahead (the first pass over a block
// of W), the next block into L2 (the later passes over a block, from L2, then overlap the next
// block's trip from memory), or nothing. The next block is fetched over the kNextBlockPasses passes
// after the first (each takes every kNextBlockPasses-th line), so that its trip from memory has that
// many passes' time and still ends before the block's last pass (all of it in one pass left batched
// decode waiting on memory; three passes were no better than two).
enum class Fetch { kNone, kStream, kNextBlock };
constexpr int64_t kNextBlockPasses = 2;

// kNextBlock: this tile prefetches the lines c with c % parts == part of the next block.
template <int R, int G, Fetch F>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0, int64_t next_block_values, int64_t part = 0, int64_t parts = 1) {
  const int64_t group_values = kInterleaveRows * a.K;
  const uint16_t* w[G];
  for (int g = 0; g < G; ++g) w[g] = static_cast<const uint16_t*>(a.w) + (g0 + g) * group_values;
  const uint16_t* x[R];
  for (int r = 0; r < R; ++r) x[r] = static_cast<const uint16_t*>(a.xq) + (m0 + r) * bf16_x_stride(a.K);
  __m512 acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
  int64_t phase = 0;  // c % parts, without a division per step
  for (int64_t c = 0; c < a.K / 2; ++c, phase = phase + 1 == parts ? 0 : phase + 1) {
    __m512bh wv[G];
    for (int g = 0; g < G; ++g) {
      if constexpr (F == Fetch::kStream) prefetch_stream<G>(w[g] + 32 * c, 64);
      if constexpr (F == Fetch::kNextBlock) {
        if (phase == part) _mm_prefetch(reinterpret_cast<const char*>(w[g] + 32 * c + next_block_values), _MM_HINT_T1);
      }
      wv[g] = (__m512bh)_mm512_load_si512(w[g] + 32 * c);
    }
    for (int r = 0; r < R; ++r) {
      int32_t pair;
      std::memcpy(&pair, x[r] + 2 * c, 4);
      const __m512bh xb = (__m512bh)_mm512_set1_epi32(pair);
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_dpbf16_ps(acc[r][g], wv[g], xb);
    }
  }
  store_tile<Vec, R, G>(a, m0, g0, acc);
}

// The walk: for_each_blocked_tile (interleaved_tiles.h).
template <int MaxR, int MaxG>
void run(const MatmulArgs& a) {
  const int64_t group_values = kInterleaveRows * a.K;
  const int64_t passes = (a.M + MaxR - 1) / MaxR;
  const int64_t fetch_passes = std::min(passes - 1, kNextBlockPasses);
  for_each_blocked_tile<MaxR, MaxG>(a, group_values * 2, [&]<int R, int G>(int64_t m0, int64_t g0, int64_t next_block) {
    const int64_t pass = m0 / MaxR;
    if (m0 == 0) {
      tile<R, G, Fetch::kStream>(a, m0, g0, 0);
    } else if (pass <= fetch_passes && next_block > 0) {
      tile<R, G, Fetch::kNextBlock>(a, m0, g0, next_block * group_values, pass - 1, fetch_passes);
    } else {
      tile<R, G, Fetch::kNone>(a, m0, g0, 0);
    }
  });
}

}  // namespace

void matmul_bf16x16_dpbf16_avx512(const MatmulArgs& a) {
  if (a.M <= 4) {
    run<4, 4>(a);
  } else {
    run<8, 3>(a);
  }
}

}  // namespace lemma::kernels::x86
