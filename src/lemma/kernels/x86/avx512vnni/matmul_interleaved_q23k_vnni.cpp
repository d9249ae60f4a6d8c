// Interleaved Q2_Kx16 and Q3_Kx16 weights x Q8_K-style int8 activations with AVX-512 VNNI
// (interleaved_blocks.h). Per 256-value block and group of 16 W rows, each 64-byte code chunk holds
// 4 values of 16 rows in each of its 4 bit pairs: one shift and one and give the 2-bit codes, Q3_K adds
// 4 where its 64-bit high-bit mask is set (one masked byte add), and one vpdpbusd multiplies them by 4
// codes of x broadcast from memory. A sub-block's sum starts at -4 s_j for Q3_K (so it ends as
// sum (u - 4) q); it is weighted by the rows' scales with vpmulld; Q2_K's mins meet x's 16-value
// code sums in 8 vpdpwssd. Then one or two FMAs for 16 outputs. All integer sums are exact, so the
// bits equal the oracle's whatever the instruction order. Register tile: one group (decode: one
// forward stream per thread, its prefetches spread over the superblock; prefill: up to 4 rows of x).
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/vec/vec_avx512.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

using Vec = VecAvx512;

constexpr int64_t kValues = 256;

// Q3_K's 16 scales of the 16 rows, minus 32, as int8 bytes: vector q, byte b = sub-block 4 q + b
// (ggml's 12-byte packing: low nibbles in bytes 0..7, top bit pairs in bytes 8..11).
void unpack_q3k_scales(const uint8_t* packed, __m512i v[4]) {
  const __m512i c0 = _mm512_loadu_si512(packed), c1 = _mm512_loadu_si512(packed + 64), c2 = _mm512_loadu_si512(packed + 128);
  const __m512i low4 = _mm512_set1_epi8(0x0F), top2 = _mm512_set1_epi8(0x30), minus32 = _mm512_set1_epi8(32);
  const __m512i low[4] = {_mm512_and_si512(c0, low4), _mm512_and_si512(c1, low4),
                          _mm512_and_si512(_mm512_srli_epi16(c0, 4), low4), _mm512_and_si512(_mm512_srli_epi16(c1, 4), low4)};
  const __m512i high[4] = {_mm512_and_si512(_mm512_slli_epi16(c2, 4), top2), _mm512_and_si512(_mm512_slli_epi16(c2, 2), top2),
                           _mm512_and_si512(c2, top2), _mm512_and_si512(_mm512_srli_epi16(c2, 2), top2)};
  for (int q = 0; q < 4; ++q) v[q] = _mm512_sub_epi8(_mm512_or_si512(low[q], high[q]), minus32);
}

template <bool kQ3, int R, int G>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0) {
  using L = Q23Kx16Layout<kQ3>;
  const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4), pairs16 = _mm512_set1_epi32(0x000F000F);
  kquant_group_tile<Vec, R, G>(a, m0, g0, L::kSuperBytes, [&](int64_t b, const uint8_t* const (&group)[G], const Q8kRows<R>& x, __m512 (&acc)[R][G]) {
    // Q2_K's mins: x's 16-value sums as int16 pairs (s_4w, s_4w+2) and (s_4w+1, s_4w+3).
    __m512i xs_pair[R][8];
    if constexpr (!kQ3)
      for (int r = 0; r < R; ++r)
        for (int w = 0; w < 4; ++w)
          for (int o = 0; o < 2; ++o) {
            const int16_t* s = x.sums[r] + b * 16 + 4 * w + o;
            xs_pair[r][2 * w + o] = _mm512_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(s[0]) & 0xFFFFu) |
                                                                          (static_cast<uint32_t>(s[2]) << 16)));
          }
    for (int g = 0; g < G; ++g) {
      const uint8_t* super = group[g] + b * L::kSuperBytes;
      if constexpr (G > 1) prefetch_stream<G>(super, L::kSuperBytes);
      __m512i sc[4];  // Q2_K: the raw scale bytes (sc low nibble, mn high); Q3_K: sc - 32 as int8
      if constexpr (kQ3) {
        unpack_q3k_scales(super + L::kScalesAt, sc);
      } else {
        for (int w = 0; w < 4; ++w) sc[w] = _mm512_loadu_si512(super + L::kScalesAt + 64 * w);
      }
      __m512i S[R], N[R];
      for (int r = 0; r < R; ++r) {
        S[r] = _mm512_setzero_si512();
        N[r] = _mm512_setzero_si512();
        if constexpr (!kQ3)  // N = sum_j mn_j s_j: int16 mins (high nibbles of bytes 0/2, then 1/3)
          for (int w = 0; w < 4; ++w) {
            N[r] = _mm512_dpwssd_epi32(N[r], _mm512_and_si512(_mm512_srli_epi32(sc[w], 4), pairs16), xs_pair[r][2 * w]);
            N[r] = _mm512_dpwssd_epi32(N[r], _mm512_and_si512(_mm512_srli_epi32(sc[w], 12), pairs16), xs_pair[r][2 * w + 1]);
          }
      }
      // Half h of the codes (chunks 8 h + p, bit pairs f: values 32 (4 h + f) + 4 p + t); p < 4 and
      // p >= 4 are different sub-blocks (j = 8 h + 2 f + Q).
      const auto quarter_pass = [&]<int H, int Q>() {
        __m512i U[R][4];
        for (int r = 0; r < R; ++r)
          for (int f = 0; f < 4; ++f)
            U[r][f] = kQ3 ? _mm512_set1_epi32(-4 * x.sums[r][b * 16 + 8 * H + 2 * f + Q]) : _mm512_setzero_si512();
        for (int p = 4 * Q; p < 4 * Q + 4; ++p) {
          if constexpr (G == 1) prefetch_stream_part<G, 16>(super, L::kSuperBytes, 8 * H + p);
          const __m512i v = _mm512_loadu_si512(super + L::kCodesAt + 64 * (8 * H + p));
          __m512i u[4] = {_mm512_and_si512(v, three), _mm512_and_si512(_mm512_srli_epi16(v, 2), three),
                          _mm512_and_si512(_mm512_srli_epi16(v, 4), three), _mm512_and_si512(_mm512_srli_epi16(v, 6), three)};
          if constexpr (kQ3)
            for (int f = 0; f < 4; ++f)
              u[f] = _mm512_mask_add_epi8(u[f], Vec::load_mask64(super + L::kHighAt + 8 * (8 * (4 * H + f) + p)), u[f], four);
          for (int r = 0; r < R; ++r) {
            const int8_t* xc = x.codes[r] + b * kValues + 128 * H + 4 * p;
            for (int f = 0; f < 4; ++f) U[r][f] = _mm512_dpbusd_epi32(U[r][f], u[f], _mm512_set1_epi32(load_i32(xc + 32 * f)));
          }
        }
        // Sub-block 8 H + 2 f + Q: scale vector 2 H + f / 2, byte (2 f + Q) % 4.
        __m512i scale[4];
        q23k_scales<Vec, kQ3, Q>(sc[2 * H], sc[2 * H + 1], scale);
        for (int r = 0; r < R; ++r)
          for (int f = 0; f < 4; ++f) S[r] = _mm512_add_epi32(S[r], _mm512_mullo_epi32(scale[f], U[r][f]));
      };
      for_each_quarter(quarter_pass);
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super)));
      const __m512 dmin = kQ3 ? _mm512_setzero_ps() : _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + 32)));
      for (int r = 0; r < R; ++r) {
        const __m512 dxv = _mm512_set1_ps(x.scales[r][b]);
        acc[r][g] = _mm512_fmadd_ps(_mm512_mul_ps(d, dxv), _mm512_cvtepi32_ps(S[r]), acc[r][g]);
        if constexpr (!kQ3) acc[r][g] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dxv), _mm512_cvtepi32_ps(N[r]), acc[r][g]);
      }
    }
  });
}

template <bool kQ3>
void run(const MatmulArgs& a) {
  for_each_group_tile<1, TileShape{1, 1}, TileShape{4, 1}>(a, [&]<int R, int G>(int64_t m0, int64_t g0) { tile<kQ3, R, G>(a, m0, g0); });
}

}  // namespace

void matmul_q2_kx16_int8_avx512vnni(const MatmulArgs& a) { run<false>(a); }
void matmul_q3_kx16_int8_avx512vnni(const MatmulArgs& a) { run<true>(a); }

}  // namespace lemma::kernels::x86
