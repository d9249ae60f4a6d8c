// GGUF Q8_0/Q4_0/Q5_0 weights x int8 activations (int8_activations.h) with AVX2 (no VNNI).
// Register tile of up to 2 rows of x by 2 rows of W. Per 32-value block each W row is decoded once to
// signed codes q_w (and |q_w|); each x row's codes lose their +128 (q_x); vpmaddubsw(|q_w|, q_x with
// q_w's sign) keeps pairs within int16 (2 * 128 * 127 < 32768, so even a -128 Q8_0 code is exact),
// vpmaddwd widens lane j to the exact sum S_j of products 4j..4j+3, and one FMA with d_w * d_x adds
// the block to the even-block or odd-block accumulator: lanes 0..7 and 8..15 of the reference.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/x86/horizontal_sum.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/int8_tiles.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int kMaxRows = 2;
constexpr int kMaxCols = 2;

float f16_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

__m256i nibbles(const uint8_t* p) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i low = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low), _mm_and_si128(packed, low));
}

struct Q8_0 {
  static constexpr int64_t kBytes = 34;
  static __m256i codes(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2)); }
};

struct Q4_0 {
  static constexpr int64_t kBytes = 18;
  static __m256i codes(const uint8_t* p) { return _mm256_sub_epi8(nibbles(p + 2), _mm256_set1_epi8(8)); }
};

struct Q5_0 {
  static constexpr int64_t kBytes = 22;
  static __m256i codes(const uint8_t* p) {
    uint32_t qh;
    std::memcpy(&qh, p + 2, 4);
    // Byte j of `spread` holds byte j / 8 of qh; selecting bit j % 8 gives value j's fifth bit.
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                                               _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
    const __m256i high = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(16));
    return _mm256_sub_epi8(_mm256_or_si256(nibbles(p + 6), high), _mm256_set1_epi8(16));
  }
};

template <class W, int R, int C>
void tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  const int64_t blocks = a.K / kInt8ActivationBlock;
  const uint8_t* w[C];
  weight_rows<C>(a, n0, w);
  const uint8_t* xc[R];
  const float* xs[R];
  for (int r = 0; r < R; ++r) {
    xc[r] = int8_codes(a.xq, a.K, m0 + r);
    xs[r] = int8_scales(a.xq, a.K, m0 + r);
  }
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[2][R][C];  // [block parity]
  for (auto& parity : acc)
    for (auto& row : parity)
      for (auto& v : row) v = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m256i q[C], magnitude[C];
    float dw[C];
    for (int c = 0; c < C; ++c) {
      const uint8_t* block = w[c] + b * W::kBytes;
      // The same place in the row C rows on (the next tile's): W streams ahead of its use.
      if (b % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(block + C * a.w_row_bytes), _MM_HINT_T0);
      q[c] = W::codes(block);
      magnitude[c] = _mm256_abs_epi8(q[c]);  // -128 -> 0x80, read as 128 by vpmaddubsw
      dw[c] = f16_at(block);
    }
    for (int r = 0; r < R; ++r) {
      const __m256i x = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc[r] + b * 32)), flip);
      for (int c = 0; c < C; ++c) {
        const __m256i pairs = _mm256_maddubs_epi16(magnitude[c], _mm256_sign_epi8(x, q[c]));
        const __m256 sums = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        __m256& lanes = acc[b % 2][r][c];
        lanes = _mm256_fmadd_ps(_mm256_set1_ps(dw[c] * xs[r][b]), sums, lanes);
      }
    }
  }
  float y[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) y[r][c] = reduce8(_mm256_add_ps(acc[0][r][c], acc[1][r][c]));
  store_sums<R, C>(a, m0, n0, y);
}

template <class W>
void run(const MatmulArgs& a) {
  for_each_tile<kMaxRows, kMaxCols>(a.M, a.N, [&]<int R, int C>(int64_t m0, int64_t n0) { tile<W, R, C>(a, m0, n0); });
}

}  // namespace

void matmul_q8_0_int8_avx2(const MatmulArgs& a) { run<Q8_0>(a); }
void matmul_q4_0_int8_avx2(const MatmulArgs& a) { run<Q4_0>(a); }
void matmul_q5_0_int8_avx2(const MatmulArgs& a) { run<Q5_0>(a); }

}  // namespace lemma::kernels::x86
