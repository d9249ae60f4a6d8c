// Interleaved f16x16 weights x f32 activations (interleaved_blocks.h) over the vector layer, once
// per ISA. For each k, a 32-byte chunk holds 16 rows' value k: vcvtph2ps widens it, 16 / kWidth
// vectors (AVX2: two halves of 8 rows), and one FMA per vector and row of x adds it times x_k
// broadcast: no horizontal sums, and W read as one forward stream per group of 16 rows. Each output
// is one lane of one accumulator fed in k order: the oracle's bits (matmul_f16x16_reference),
// whatever tile, cache block or M it runs in.
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/vec/vec.h"

namespace lemma::kernels::x86 {

namespace {

using F = Vec::F;
constexpr int kParts = kInterleaveRows / Vec::kWidth;  // vectors per 16 rows

// Register tiles (rows of x by groups of 16 W rows) for M <= 2, where reading W bounds the time and
// several groups keep the FMA chains independent, and for larger M, as many accumulators as the
// register file holds: AVX2 2 x 2 and 4 x 1 (8 of 16 ymm), AVX-512 2 x 4 and 6 x 4 (24 of 32 zmm).
// AVX-512 also walks W in blocks of groups that stay in L2 while every tile of x rows passes, and
// prefetches each block's streams in its first pass; AVX2 reads each group as one forward stream in
// plain tile order, which the hardware prefetcher follows.
struct Tiles {
  int decode_rows, decode_groups, rows, groups;
  bool blocked;
};
constexpr Tiles kTiles = Vec::kWidth == 16 ? Tiles{2, 4, 6, 4, true} : Tiles{2, 2, 4, 1, false};

template <int R, int G, bool kPrefetch>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0) {
  const uint16_t* w[G];
  for (int g = 0; g < G; ++g) w[g] = static_cast<const uint16_t*>(a.w) + (g0 + g) * kInterleaveRows * a.K;
  const float* x[R];
  for (int r = 0; r < R; ++r) x[r] = a.x + (m0 + r) * a.x_stride;
  F acc[R][G][kParts];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g)
      for (int h = 0; h < kParts; ++h) acc[r][g][h] = Vec::zero();
  for (int64_t k = 0; k < a.K; ++k) {
    F wv[G][kParts];
    for (int g = 0; g < G; ++g) {
      if constexpr (kPrefetch) {
        if (k % 2 == 0) prefetch_stream<G>(w[g] + kInterleaveRows * k, 64);
      }
      for (int h = 0; h < kParts; ++h) wv[g][h] = Vec::load_f16(w[g] + kInterleaveRows * k + Vec::kWidth * h);
    }
    for (int r = 0; r < R; ++r) {
      const F xk = Vec::set1(x[r][k]);
      for (int g = 0; g < G; ++g)
        for (int h = 0; h < kParts; ++h) acc[r][g][h] = Vec::fmadd(wv[g][h], xk, acc[r][g][h]);
    }
  }
  store_tile<Vec>(a, m0, g0, acc);
}

template <int MaxR, int MaxG>
void run(const MatmulArgs& a) {
  if constexpr (kTiles.blocked) {
    for_each_blocked_tile<MaxR, MaxG>(a, kInterleaveRows * a.K * 2, [&]<int R, int G>(int64_t m0, int64_t g0, int64_t) {
      // The first pass over a block reads it from memory: prefetch its streams.
      if (m0 == 0) {
        tile<R, G, true>(a, m0, g0);
      } else {
        tile<R, G, false>(a, m0, g0);
      }
    });
  } else {
    const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
    for_each_tile<MaxR, MaxG>(a.M, groups, [&]<int R, int G>(int64_t m0, int64_t g0) { tile<R, G, false>(a, m0, g0); });
  }
}

}  // namespace

void simd::matmul_f16x16(const MatmulArgs& a) {
  if (a.M <= 2) {
    run<kTiles.decode_rows, kTiles.decode_groups>(a);
  } else {
    run<kTiles.rows, kTiles.groups>(a);
  }
}

}  // namespace lemma::kernels::x86
