// Interleaved W8A8x16 (interleaved_blocks.h) with AVX2, for CPUs without AVX-512 VNNI, over the W8A8
// rule's activations (lemma_int_blocks.h, in the signed int8 layout: x86/simd/quantize_activations.cpp).
// A row's whole dot product is one exact int32 sum per output lane: each 4-value chunk of 8 rows
// (half a 64-byte chunk) by |q| times x with q's sign (vpmaddubsw; q = code - 128 may be -128, x
// never is) widened to int32 (vpmaddwd), as the Q8_0x16 AVX2 kernel sums a block; so S equals
// W8A8's integer sum whatever the order, and y = float(S) * (s_x * d) (+ bias) is bit for bit
// matmul_w8a8x16_reference. Register tile: up to 2 rows of x by one group (both halves), for every
// M: rows never depend on M.
#include <immintrin.h>

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
  store_group<VecAvx2, R>(a, m0, g, [&](int r, int h) { return y[h][r]; });
}

}  // namespace

void matmul_w8a8x16_avx2(const MatmulArgs& a) {
  if (a.K > kW8A8MaxK) return write_nan_outputs(a);  // outside the format (lemma_int_blocks.h)
  for_each_group<kPrefillRows>(a, [&]<int R, int G>(int64_t m0, int64_t g) { tile<R>(a, m0, g); });
}

}  // namespace lemma::kernels::x86
