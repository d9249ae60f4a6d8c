// Interleaved W8A8x16 (interleaved_blocks.h) with AVX2, for CPUs without AVX-512 VNNI, and the AVX2
// quantiser of its activations (the W8A8 rule, lemma_int_blocks.h, into the signed int8 layout).
// A row's whole dot product is one exact int32 sum per output lane: each 4-value chunk of 8 rows
// (half a 64-byte chunk) by |q| times x with q's sign (vpmaddubsw; q = code - 128 may be -128, x
// never is) widened to int32 (vpmaddwd), as the Q8_0x16 AVX2 kernel sums a block; so S equals
// W8A8's integer sum whatever the order, and y = float(S) * (s_x * d) (+ bias) is bit for bit
// matmul_w8a8x16_reference. Register tile: up to 2 rows of x by one group (both halves), for every
// M: rows never depend on M.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/kernels/x86/avx2/interleaved_avx2.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kBlock = 32;
constexpr int64_t kSuperBytes = 16 * 34;
constexpr int kPrefillRows = 2;  // as Q8_0x16's AVX2 kernel (3 and 4 measured alike there)

template <int R>
void tile(const MatmulArgs& a, int64_t m0, int64_t g) {
  const int64_t blocks = a.K / kBlock;
  const uint8_t* group = static_cast<const uint8_t*>(a.w) + g * blocks * kSuperBytes;
  Int8SignedRow x[R];
  for (int r = 0; r < R; ++r) x[r] = int8_signed_row(a.xq, a.K, m0 + r);
  __m256i s[2][R];
  for (int r = 0; r < R; ++r) s[0][r] = s[1][r] = _mm256_setzero_si256();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* codes = group + b * kSuperBytes + 32;
    const int8_t* xb[R];
    for (int r = 0; r < R; ++r) xb[r] = x[r].codes + b * kBlock;
    add_byte_sums<R, 0>(codes, xb, s[0]);
    add_byte_sums<R, 1>(codes, xb, s[1]);
  }
  __m256 y[2][R];
  for (int h = 0; h < 2; ++h) {  // every superblock holds the rows' one scale d; the first one's serves
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group + 16 * h)));
    for (int r = 0; r < R; ++r)
      y[h][r] = _mm256_mul_ps(_mm256_cvtepi32_ps(s[h][r]), _mm256_mul_ps(_mm256_set1_ps(x[r].scales[0]), d));
  }
  for (int r = 0; r < R; ++r) store_group(a, m0 + r, g, y[0][r], y[1][r]);
}

// The largest |value| of 8 lanes, in every lane.
__m256 max_lanes(__m256 v) {
  v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
  v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
}

int32_t sum_lanes(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void quantize_w8a8_signed_activations_avx2(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t blocks = K / kBlock;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  const __m256i byte_order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undoes the packs' lane interleave
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    __m256 vmax = _mm256_setzero_ps();
    // max(|x|, vmax) keeps vmax where |x| is NaN, as std::max(amax, |x|) does in the reference.
    for (int64_t k = 0; k < blocks * kBlock; k += 8) vmax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(row + k), abs_mask), vmax);
    float amax = _mm256_cvtss_f32(max_lanes(vmax));
    for (int64_t k = blocks * kBlock; k < K; ++k) amax = std::max(amax, std::fabs(row[k]));
    const __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    auto* codes = const_cast<int8_t*>(int8_signed_codes(out, K, m));
    auto* sums = const_cast<int32_t*>(int8_block_sums(out, K, m));
    for (int64_t b = 0; b < blocks; ++b) {
      __m256i v[4];
      __m256i sum = _mm256_setzero_si256();
      for (int i = 0; i < 4; ++i) {
        // x * id rounded half to even (MXCSR's default), as std::nearbyint in the reference.
        v[i] = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(row + b * kBlock + 8 * i), id)), lo), hi);
        sum = _mm256_add_epi32(sum, v[i]);
      }
      const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + b * kBlock), _mm256_permutevar8x32_epi32(bytes, byte_order));
      sums[b] = sum_lanes(sum);
    }
    finish_w8a8_signed_row(out, K, m, amax);
  }
}

void matmul_w8a8x16_avx2(const MatmulArgs& a) {
  if (a.K > kW8A8MaxK) return write_nan_outputs(a);  // outside the format (lemma_int_blocks.h)
  for_each_group<kPrefillRows>(a, [&]<int R, int G>(int64_t m0, int64_t g) { tile<R>(a, m0, g); });
}

}  // namespace lemma::kernels::x86
