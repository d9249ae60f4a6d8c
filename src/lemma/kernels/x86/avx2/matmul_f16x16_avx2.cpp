// Interleaved f16x16 weights x f32 activations with AVX2 + F16C (interleaved_blocks.h): the AVX-512
// kernel's steps on two halves of 8 rows. For each k, vcvtph2ps of each half of the 32-byte chunk
// (16 bytes: 8 rows' value k) and one FMA per half and row of x with x_k broadcast; each output is
// one lane fed in k order, the oracle's bits (matmul_f16x16_reference). Register tile: up to 2 rows
// of x by 2 groups for M <= 2 (8 independent FMA chains), else up to 4 rows by one group (8
// accumulators, the group's chunk in L1 while the rows pass). No software prefetch: each group is
// one forward stream. Rows never depend on M.
#include <immintrin.h>

#include <cstdint>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/x86/avx2/interleaved_avx2.h"
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

template <int R, int G>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0) {
  const uint16_t* w[G];
  for (int g = 0; g < G; ++g) w[g] = static_cast<const uint16_t*>(a.w) + (g0 + g) * kInterleaveRows * a.K;
  const float* x[R];
  for (int r = 0; r < R; ++r) x[r] = a.x + (m0 + r) * a.x_stride;
  __m256 acc[R][G][2];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g][0] = acc[r][g][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < a.K; ++k) {
    __m256 wv[G][2];
    for (int g = 0; g < G; ++g)
      for (int h = 0; h < 2; ++h)
        wv[g][h] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[g] + kInterleaveRows * k + 8 * h)));
    for (int r = 0; r < R; ++r) {
      const __m256 xk = _mm256_set1_ps(x[r][k]);
      for (int g = 0; g < G; ++g)
        for (int h = 0; h < 2; ++h) acc[r][g][h] = _mm256_fmadd_ps(wv[g][h], xk, acc[r][g][h]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) store_group(a, m0 + r, g0 + g, acc[r][g][0], acc[r][g][1]);
}

}  // namespace

void matmul_f16x16_avx2(const MatmulArgs& a) {
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  const auto t = [&]<int R, int G>(int64_t m0, int64_t g0) { tile<R, G>(a, m0, g0); };
  if (a.M <= 2) {
    for_each_tile<2, 2>(a.M, groups, t);
  } else {
    for_each_tile<4, 1>(a.M, groups, t);
  }
}

}  // namespace lemma::kernels::x86
