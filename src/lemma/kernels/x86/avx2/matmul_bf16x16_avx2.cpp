// Interleaved bf16x16 weights x bf16 activations with AVX2 + FMA, for CPUs without AVX512_BF16:
// vdpbf16ps spelled out, bit for bit the oracle (matmul_bf16x16_reference) and so the AVX-512 BF16
// kernel. A 64-byte chunk holds one value pair of 16 rows; each half (8 rows) is one ymm whose
// 32-bit lanes are (even, odd) bf16 pairs, so a pair's odd value is the lane with its low half
// cleared and its even value the lane shifted left by 16: exact f32s. Per pair, as vdpbf16ps, the
// odd product is added first, then the even one, each with one rounding (an FMA; the product of two
// bf16 values is exact in f32). vdpbf16ps also treats subnormal inputs as zero and flushes subnormal
// results: the kernel runs with MXCSR's DAZ and FTZ set (restored before the outputs, whose + bias
// is an ordinary add, as the oracle's). Register tile: for M <= 2 up to 2 rows of x by 2 groups (4
// or more independent FMA chains, as each output's chain is K long); else up to 4 rows by one group,
// whose 16 rows stay in L1 while the rows of x pass (faster for prefill than 2 x 2 or 6 x 1).
// No software prefetch: each group is one forward stream. Rows never depend on M.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/x86/avx2/interleaved_avx2.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

constexpr unsigned kDaz = 0x0040, kFtz = 0x8000;

template <int R, int G>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0) {
  const int64_t group_values = kInterleaveRows * a.K;
  const uint16_t* w[G];
  for (int g = 0; g < G; ++g) w[g] = static_cast<const uint16_t*>(a.w) + (g0 + g) * group_values;
  const uint16_t* x[R];
  for (int r = 0; r < R; ++r) x[r] = static_cast<const uint16_t*>(a.xq) + (m0 + r) * bf16_x_stride(a.K);
  __m256 acc[R][G][2];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g][0] = acc[r][g][1] = _mm256_setzero_ps();
  const __m256i high = _mm256_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
  for (int64_t c = 0; c < a.K / 2; ++c) {
    __m256 odd[G][2], even[G][2];
    for (int g = 0; g < G; ++g)
      for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[g] + 32 * c + 16 * h));
        odd[g][h] = _mm256_castsi256_ps(_mm256_and_si256(v, high));
        even[g][h] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
      }
    for (int r = 0; r < R; ++r) {
      uint32_t pair;
      std::memcpy(&pair, x[r] + 2 * c, 4);
      const __m256 x_odd = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int32_t>(pair & 0xFFFF0000u)));
      const __m256 x_even = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int32_t>(pair << 16)));
      for (int g = 0; g < G; ++g)
        for (int h = 0; h < 2; ++h) {
          acc[r][g][h] = _mm256_fmadd_ps(x_odd, odd[g][h], acc[r][g][h]);
          acc[r][g][h] = _mm256_fmadd_ps(x_even, even[g][h], acc[r][g][h]);
        }
    }
  }
  float* out = a.y;  // accumulators parked in y; the bias is added after MXCSR is restored
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) {
      const int64_t n0 = (g0 + g) * kInterleaveRows;
      float tmp[kInterleaveRows];
      _mm256_storeu_ps(tmp, acc[r][g][0]);
      _mm256_storeu_ps(tmp + 8, acc[r][g][1]);
      const int64_t valid = a.N - n0 < kInterleaveRows ? a.N - n0 : kInterleaveRows;
      std::memcpy(out + (m0 + r) * a.y_stride + n0, tmp, static_cast<size_t>(valid) * sizeof(float));
    }
}

// Every tile under DAZ + FTZ; a separate, not inlined function so that no arithmetic moves across
// the MXCSR writes around it.
[[gnu::noinline]] void run_tiles(const MatmulArgs& a) {
  for_each_group_tile<2, TileShape{2, 2}, TileShape{4, 1}>(a, [&]<int R, int G>(int64_t m0, int64_t g0) { tile<R, G>(a, m0, g0); });
}

}  // namespace

void matmul_bf16x16_avx2(const MatmulArgs& a) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | kDaz | kFtz);
  run_tiles(a);
  _mm_setcsr(saved);
  if (a.bias != nullptr)
    for (int64_t m = 0; m < a.M; ++m)
      for (int64_t n = 0; n < a.N; ++n) a.y[m * a.y_stride + n] += a.bias[n];
}

}  // namespace lemma::kernels::x86
