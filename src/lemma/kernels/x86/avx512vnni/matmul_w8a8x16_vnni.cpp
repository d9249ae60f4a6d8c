// Interleaved W8A8x16 (interleaved_blocks.h) with AVX-512 VNNI, and the AVX-512 quantiser of its
// activations (the W8A8 rule, lemma_int_blocks.h, into the signed int8 layout). A row's whole dot
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
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

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
  store_tile<R, G>(a, m0, g0, y);
}

}  // namespace

void quantize_w8a8_signed_activations_avx512(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t blocks = K / kBlock;
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    __m512 vmax = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k += 16) vmax = _mm512_max_ps(vmax, _mm512_and_ps(_mm512_loadu_ps(row + k), abs_mask));
    const float amax = _mm512_reduce_max_ps(vmax);
    const __m512 id = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    auto* codes = const_cast<int8_t*>(int8_signed_codes(out, K, m));
    auto* sums = const_cast<int32_t*>(int8_block_sums(out, K, m));
    for (int64_t b = 0; b < blocks; ++b) {
      __m512i sum = _mm512_setzero_si512();
      for (int64_t k = b * kBlock; k < (b + 1) * kBlock; k += 16) {
        // x * id rounded half to even (MXCSR's default), as std::nearbyint in the reference.
        const __m512i v = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(row + k), id)), lo), hi);
        sum = _mm512_add_epi32(sum, v);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + k), _mm512_cvtepi32_epi8(v));
      }
      sums[b] = _mm512_reduce_add_epi32(sum);
    }
    finish_w8a8_signed_row(out, K, m, amax);
  }
}

void matmul_w8a8x16_avx512vnni(const MatmulArgs& a) {
  if (a.K > kW8A8MaxK) return write_nan_outputs(a);  // outside the format (lemma_int_blocks.h)
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  const auto t = [&]<int R, int G>(int64_t m0, int64_t g0) { tile<R, G>(a, m0, g0); };
  if (a.M <= 2) {
    for_each_tile<2, 1>(a.M, groups, t);
  } else {
    for_each_tile<4, 2>(a.M, groups, t);
  }
}

}  // namespace lemma::kernels::x86
