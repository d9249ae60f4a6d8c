// Interleaved W8A8x16 (interleaved_blocks.h) with AVX-512 VNNI, over the W8A8 rule's activations
// (lemma_int_blocks.h, in the signed int8 layout: x86/simd/quantize_activations.cpp). A row's whole dot
// product is one exact int32 sum per output lane, started at -128 * (x's code sum) (the codes are
// q + 128) and fed by one vpdpbusd per 4 values of 16 rows, so it equals W8A8's integer sum whatever
// the order; y = float(S) * (s_x * d) (+ bias): bit for bit matmul_w8a8_reference. Register tile:
// up to 4 rows of x by 2 groups (2 x 1 for decode), for every M: rows never depend on M.
#include <immintrin.h>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/vec/vec_avx512.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

using Vec = VecAvx512;

constexpr int64_t kBlock = 32;
constexpr int64_t kSuperBytes = 16 * 34;

template <int R, int G>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0) {
  const int64_t blocks = a.K / kBlock;
  const uint8_t* group[G];
  group_starts<G>(a, g0, blocks, kSuperBytes, group);
  Int8SignedRow x[R];
  __m512i s[R][G];
  for (int r = 0; r < R; ++r) {
    x[r] = int8_signed_row(a.xq, a.K, m0 + r);
    int32_t total = 0;
    for (int64_t b = 0; b < blocks; ++b) total += x[r].sums[b];
    for (int g = 0; g < G; ++g) s[r][g] = _mm512_set1_epi32(-128 * total);
  }
  for (int64_t b = 0; b < blocks; ++b)
    for (int g = 0; g < G; ++g) {
      const uint8_t* codes = group[g] + b * kSuperBytes + 32;
      for (int j = 0; j < 8; ++j) {
        const __m512i u = _mm512_loadu_si512(codes + 64 * j);
        for (int r = 0; r < R; ++r)
          s[r][g] = _mm512_dpbusd_epi32(s[r][g], u, _mm512_set1_epi32(load_i32(x[r].codes + b * kBlock + 4 * j)));
      }
    }
  __m512 y[R][G];
  for (int g = 0; g < G; ++g) {
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group[g])));
    for (int r = 0; r < R; ++r)
      y[r][g] = _mm512_mul_ps(_mm512_cvtepi32_ps(s[r][g]), _mm512_mul_ps(_mm512_set1_ps(x[r].scales[0]), d));
  }
  store_tile<Vec, R, G>(a, m0, g0, y);
}

}  // namespace

void matmul_w8a8x16_avx512vnni(const MatmulArgs& a) {
  if (a.K > kW8A8MaxK) return write_nan_outputs(a);  // outside the format (lemma_int_blocks.h)
  for_each_group_tile<2, TileShape{2, 1}, TileShape{4, 2}>(a, [&]<int R, int G>(int64_t m0, int64_t g0) { tile<R, G>(a, m0, g0); });
}

}  // namespace lemma::kernels::x86
