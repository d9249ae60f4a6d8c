// Interleaved Q2_Kx16 and Q3_Kx16 weights x Q8_K-style int8 activations with AVX2, for CPUs without
// AVX-512 VNNI: the VNNI kernel's steps (matmul_interleaved_q23k_vnni.cpp) on halves of 8 rows, with
// vpmaddubsw + vpmaddwd for vpdpbusd. Per 4 values of 8 rows, one shift and one and give the 2-bit
// codes of a bit pair, Q3_K adds 4 where its high-bit mask is set, and vpmaddubsw multiplies them by
// 4 codes of x (u <= 7, |x| <= 127: a pair is at most 1778, so a 16-value sub-block's 4 steps stay
// exact in int16); vpmaddwd widens each sub-block's sum to int32, which starts at -4 s_j for Q3_K and
// is weighted by the rows' scales (vpmulld). Q2_K's mins meet x's 16-value code sums in 8 vpmaddwd
// of int16 pairs. All integer sums are exact, so every output is bit for bit the oracle's
// (matmul_q2_kx16_int8_reference / q3). Register tile: up to 2 rows of x by one group; each block
// runs half 0 then half 1 of the rows (4 rows of x per tile were no faster). Rows never depend on M.
#include <immintrin.h>

#include <cstdint>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/avx2/interleaved_avx2.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kValues = 256;

// Half H's Q3_K scales minus 32 as int8 bytes: vector q, byte b = sub-block 4 q + b (ggml's 12-byte
// packing: low nibbles in bytes 0..7, top bit pairs in bytes 8..11).
template <int H>
void unpack_q3k_scales(const uint8_t* packed, __m256i v[4]) {
  const auto at = [&](int w) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed + 64 * w + 32 * H)); };
  const __m256i c0 = at(0), c1 = at(1), c2 = at(2);
  const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30), minus32 = _mm256_set1_epi8(32);
  const __m256i low[4] = {_mm256_and_si256(c0, low4), _mm256_and_si256(c1, low4),
                          _mm256_and_si256(_mm256_srli_epi16(c0, 4), low4), _mm256_and_si256(_mm256_srli_epi16(c1, 4), low4)};
  const __m256i high[4] = {_mm256_and_si256(_mm256_slli_epi16(c2, 4), top2), _mm256_and_si256(_mm256_slli_epi16(c2, 2), top2),
                           _mm256_and_si256(c2, top2), _mm256_and_si256(_mm256_srli_epi16(c2, 2), top2)};
  for (int q = 0; q < 4; ++q) v[q] = _mm256_sub_epi8(_mm256_or_si256(low[q], high[q]), minus32);
}

// The exact S (and Q2_K's N) of one block for R rows of x and rows 8 H .. 8 H + 7 of the group.
template <bool kQ3, int R, int H>
void block_half(const uint8_t* super, const Q8kRows<R>& x, int64_t b, bool prefetch, __m256i (&S)[R], __m256i (&N)[R]) {
  using L = Q23Kx16Layout<kQ3>;
  const __m256i three = _mm256_set1_epi8(3), pairs16 = _mm256_set1_epi32(0x000F000F);
  __m256i sc[4];  // Q2_K: the raw scale bytes (sc low nibble, mn high); Q3_K: sc - 32 as int8
  if constexpr (kQ3) {
    unpack_q3k_scales<H>(super + L::kScalesAt, sc);
  } else {
    for (int w = 0; w < 4; ++w) sc[w] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + L::kScalesAt + 64 * w + 32 * H));
  }
  for (int r = 0; r < R; ++r) {
    S[r] = N[r] = _mm256_setzero_si256();
    if constexpr (!kQ3)  // N = sum_j mn_j s_j: int16 mins (high nibbles of bytes 0/2, then 1/3) x (s_j, s_j+2)
      for (int w = 0; w < 4; ++w)
        for (int o = 0; o < 2; ++o) {
          const int16_t* s = x.sums[r] + b * 16 + 4 * w + o;
          const __m256i xs = _mm256_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(s[0]) & 0xFFFFu) | (static_cast<uint32_t>(s[2]) << 16)));
          N[r] = _mm256_add_epi32(N[r], _mm256_madd_epi16(_mm256_and_si256(_mm256_srli_epi32(sc[w], 4 + 8 * o), pairs16), xs));
        }
  }
  // Block half BH of the codes (chunks 8 BH + p, bit pairs f: values 32 (4 BH + f) + 4 p + t); p < 4
  // and p >= 4 are different sub-blocks (j = 8 BH + 2 f + Q).
  const auto quarter_pass = [&]<int BH, int Q>() {
    __m256i t[R][4];
    for (int r = 0; r < R; ++r)
      for (int f = 0; f < 4; ++f) t[r][f] = _mm256_setzero_si256();
    for (int p = 4 * Q; p < 4 * Q + 4; ++p) {
      if (prefetch) prefetch_part(super, L::kSuperBytes, 8 * BH + p, 16);
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + L::kCodesAt + 64 * (8 * BH + p) + 32 * H));
      __m256i u[4] = {_mm256_and_si256(v, three), _mm256_and_si256(_mm256_srli_epi16(v, 2), three),
                      _mm256_and_si256(_mm256_srli_epi16(v, 4), three), _mm256_and_si256(_mm256_srli_epi16(v, 6), three)};
      if constexpr (kQ3)
        for (int f = 0; f < 4; ++f) u[f] = _mm256_or_si256(u[f], mask_bytes(super + L::kHighAt + 8 * (8 * (4 * BH + f) + p) + 4 * H, 4));
      for (int r = 0; r < R; ++r) {
        const int8_t* xc = x.codes[r] + b * kValues + 128 * BH + 4 * p;
        for (int f = 0; f < 4; ++f) t[r][f] = _mm256_add_epi16(t[r][f], _mm256_maddubs_epi16(u[f], broadcast4(xc + 32 * f)));
      }
    }
    // Sub-block 8 BH + 2 f + Q: scale vector 2 BH + f / 2, byte (2 f + Q) % 4.
    __m256i scale[4];
    q23k_scales<VecAvx2, kQ3, Q>(sc[2 * BH], sc[2 * BH + 1], scale);
    for (int r = 0; r < R; ++r)
      for (int f = 0; f < 4; ++f) {
        __m256i U = widen(t[r][f]);
        if constexpr (kQ3) U = _mm256_add_epi32(U, _mm256_set1_epi32(-4 * x.sums[r][b * 16 + 8 * BH + 2 * f + Q]));
        S[r] = _mm256_add_epi32(S[r], _mm256_mullo_epi32(scale[f], U));
      }
  };
  quarter_pass.template operator()<0, 0>();
  quarter_pass.template operator()<0, 1>();
  quarter_pass.template operator()<1, 0>();
  quarter_pass.template operator()<1, 1>();
}

template <bool kQ3, int R>
void tile(const MatmulArgs& a, int64_t m0, int64_t g) {
  using L = Q23Kx16Layout<kQ3>;
  const int64_t blocks = a.K / kValues;
  const uint8_t* group = static_cast<const uint8_t*>(a.w) + g * blocks * L::kSuperBytes;
  const Q8kRows<R> x(a.xq, a.K, m0);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const auto half = [&]<int H>(const uint8_t* super, int64_t b) {
    __m256i S[R], N[R];
    block_half<kQ3, R, H>(super, x, b, /*prefetch=*/H == 0, S, N);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 16 * H)));
    for (int r = 0; r < R; ++r) {
      const __m256 dx = _mm256_set1_ps(x.scales[r][b]);
      acc[r][H] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(S[r]), acc[r][H]);
      if constexpr (!kQ3) {
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 32 + 16 * H)));
        acc[r][H] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(N[r]), acc[r][H]);
      }
    }
  };
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* super = group + b * L::kSuperBytes;
    half.template operator()<0>(super, b);
    half.template operator()<1>(super, b);
  }
  store_group<VecAvx2, R>(a, m0, g, [&](int r, int h) { return acc[r][h]; });
}

template <bool kQ3>
void run(const MatmulArgs& a) {
  for_each_group<2>(a, [&]<int R, int G>(int64_t m0, int64_t g) { tile<kQ3, R>(a, m0, g); });
}

}  // namespace

void matmul_q2_kx16_int8_avx2(const MatmulArgs& a) { run<false>(a); }
void matmul_q3_kx16_int8_avx2(const MatmulArgs& a) { run<true>(a); }

}  // namespace lemma::kernels::x86
