// Interleaved f16x16 weights x f32 activations with AVX-512 (interleaved_blocks.h). For each k, one
// vcvtph2ps turns a 32-byte chunk (16 rows' value k) into f32 and one FMA per row of x adds it times
// x_k broadcast: 16 outputs per instruction, no horizontal sums, and W read as one forward stream per
// group of 16 rows. Each output is one lane of one accumulator fed in k order: the reference's
// sequence, whatever tile, cache block or M it runs in.
// Register tiles: up to R rows of x by G groups (2 x 4 for M <= 2, where memory bounds it and four
// streams keep the FMA chains independent; 6 x 4 otherwise: 24 accumulators, 4 W vectors). Blocks of
// groups (about 256 KiB of W) stay in L2 while every tile of x rows passes over them.
#include <immintrin.h>


#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

template <int R, int G, bool kPrefetch>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0) {
  const uint16_t* w[G];
  for (int g = 0; g < G; ++g) w[g] = static_cast<const uint16_t*>(a.w) + (g0 + g) * kInterleaveRows * a.K;
  const float* x[R];
  for (int r = 0; r < R; ++r) x[r] = a.x + (m0 + r) * a.x_stride;
  __m512 acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
  for (int64_t k = 0; k < a.K; ++k) {
    __m512 wv[G];
    for (int g = 0; g < G; ++g) {
      if constexpr (kPrefetch) {
        if (k % 2 == 0) prefetch_stream<G>(w[g] + kInterleaveRows * k, 64);
      }
      wv[g] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[g] + kInterleaveRows * k)));
    }
    for (int r = 0; r < R; ++r) {
      const __m512 xk = _mm512_set1_ps(x[r][k]);
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_fmadd_ps(wv[g], xk, acc[r][g]);
    }
  }
  store_tile<R, G>(a, m0, g0, acc);
}

template <int MaxR, int MaxG>
void run(const MatmulArgs& a) {
  for_each_blocked_tile<MaxR, MaxG>(a, kInterleaveRows * a.K * 2, [&]<int R, int G>(int64_t m0, int64_t g0, int64_t) {
    // The first pass over a block reads it from memory: prefetch its streams.
    if (m0 == 0) {
      tile<R, G, true>(a, m0, g0);
    } else {
      tile<R, G, false>(a, m0, g0);
    }
  });
}

}  // namespace

void matmul_f16x16_avx512(const MatmulArgs& a) {
  if (a.M <= 2) {
    run<2, 4>(a);
  } else {
    run<6, 4>(a);
  }
}

}  // namespace lemma::kernels::x86
