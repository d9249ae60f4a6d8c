// Interleaved Q4_Kx16 and Q5_Kx16 weights x Q8_K-style int8 activations with AVX-512 VNNI
// (interleaved_blocks.h). Q5_Kx16 is the same kernel with each code's fifth bit added: 16 per bit set
// in the 64-bit mask that lines up with the 64 codes (one masked byte add, as Q5_0x16).
// Per 256-value block and group of 16 W rows: the 16 rows' packed 6-bit scales and mins are unpacked
// at once (ggml's 12-byte packing, on 32-bit lanes); per 64 values, 8 vpdpbusd on the low nibbles and
// 8 on the high ones (4 values of 16 rows against 4 codes of x broadcast from memory) give the
// sub-block sums S_2c, S_2c+1, weighted by their scales with vpmulld; the mins term is 4 vpdpwssd of
// int16 (min, min) pairs against x's 32-value code sums. Then two conversions and two FMAs for 16
// outputs. All integer sums are exact, so the bits equal the oracle's whatever the instruction order.
// Register tile: up to 4 rows of x by 3 groups, so each block's scale unpacking and nibble (and fifth
// bit) decoding serves 4 rows (the fastest of the shapes tried; 6 x 1, and for Q6_K and Q2_K any
// G > 1, were slower). Decode reads one group at a time, so each thread's rows are one forward stream
// prefetched into L2 4 KiB ahead (faster than several groups' streams). Rows never depend on M.
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
constexpr int64_t kHighAt = 2304;  // Q5_Kx16's fifth bits
template <bool kFifthBit>
constexpr int64_t kSuperBytes = kInterleaveRows * (kFifthBit ? 176 : 144);


// The 16 rows' scales (sc) and mins (mn) of one block: bytes j of `lo` are sc/mn j, of `hi` j + 4.
struct Scales {
  __m512i sc_lo, sc_hi, mn_lo, mn_hi;
};
Scales unpack_scales(const uint8_t* super) {
  const __m512i w0 = _mm512_loadu_si512(super + 64), w1 = _mm512_loadu_si512(super + 128),
                w2 = _mm512_loadu_si512(super + 192);
  const __m512i six = _mm512_set1_epi32(0x3F3F3F3F), low4 = _mm512_set1_epi32(0x0F0F0F0F),
                top2 = _mm512_set1_epi32(0x30303030);
  return {_mm512_and_si512(w0, six),
          _mm512_or_si512(_mm512_and_si512(w2, low4), _mm512_and_si512(_mm512_srli_epi32(w0, 2), top2)),
          _mm512_and_si512(w1, six),
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, 4), low4), _mm512_and_si512(_mm512_srli_epi32(w1, 2), top2))};
}
// Byte j (0..3) of each lane as an int32.
__m512i byte_of(__m512i v, int j) { return _mm512_and_si512(_mm512_srli_epi32(v, 8 * j), _mm512_set1_epi32(0xFF)); }

template <bool kFifthBit, int R, int G>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0) {
  constexpr int64_t kSuper = kSuperBytes<kFifthBit>;
  const __m512i nibble = _mm512_set1_epi8(0x0F), even16 = _mm512_set1_epi32(0x00FF00FF);
  kquant_group_tile<Vec, R, G>(a, m0, g0, kSuper, [&](int64_t b, const uint8_t* const (&group)[G], const Q8kRows<R>& x, __m512 (&acc)[R][G]) {
    // x's 32-value code sums xs_j as int16 pairs (xs_j, xs_j+2) for the vpdpwssd of the mins.
    __m512i xs_pair[R][4];
    for (int r = 0; r < R; ++r) {
      int32_t xs[8];
      for (int j = 0; j < 8; ++j) xs[j] = x.sums[r][b * 16 + 2 * j] + x.sums[r][b * 16 + 2 * j + 1];
      for (int k = 0; k < 4; ++k) {  // pairs (0,2) (1,3) (4,6) (5,7): bytes 0/2 and 1/3 of a lane
        const int j = (k / 2) * 4 + k % 2;
        xs_pair[r][k] = _mm512_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(xs[j]) & 0xFFFFu) |
                                                               (static_cast<uint32_t>(xs[j + 2]) << 16)));
      }
    }
    for (int g = 0; g < G; ++g) {
      const uint8_t* super = group[g] + b * kSuper;
      if constexpr (G > 1) prefetch_stream<G>(super, kSuper);
      const Scales s = unpack_scales(super);
      __m512i S[R], N[R];
      for (int r = 0; r < R; ++r) {
        // N = sum_j mn_j xs_j: int16 mins (bytes 0/2, then 1/3 of each lane) times x's pairs.
        N[r] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_and_si512(s.mn_lo, even16), xs_pair[r][0]);
        N[r] = _mm512_dpwssd_epi32(N[r], _mm512_and_si512(_mm512_srli_epi32(s.mn_lo, 8), even16), xs_pair[r][1]);
        N[r] = _mm512_dpwssd_epi32(N[r], _mm512_and_si512(s.mn_hi, even16), xs_pair[r][2]);
        N[r] = _mm512_dpwssd_epi32(N[r], _mm512_and_si512(_mm512_srli_epi32(s.mn_hi, 8), even16), xs_pair[r][3]);
        S[r] = _mm512_setzero_si512();
      }
      for (int c = 0; c < 4; ++c) {
        __m512i lo_sum[R], hi_sum[R];
        for (int r = 0; r < R; ++r) lo_sum[r] = hi_sum[r] = _mm512_setzero_si512();
        for (int p = 0; p < 8; ++p) {
          if constexpr (G == 1) prefetch_stream_part<G, 32>(super, kSuper, 8 * c + p);
          const __m512i v = _mm512_loadu_si512(super + 256 + 64 * (8 * c + p));
          __m512i lo = _mm512_and_si512(v, nibble), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
          if constexpr (kFifthBit) {
            const __m512i sixteen = _mm512_set1_epi8(16);
            lo = _mm512_mask_add_epi8(lo, Vec::load_mask64(super + kHighAt + 8 * (16 * c + p)), lo, sixteen);
            hi = _mm512_mask_add_epi8(hi, Vec::load_mask64(super + kHighAt + 8 * (16 * c + 8 + p)), hi, sixteen);
          }
          for (int r = 0; r < R; ++r) {
            const int8_t* xc = x.codes[r] + b * kValues + 64 * c + 4 * p;
            lo_sum[r] = _mm512_dpbusd_epi32(lo_sum[r], lo, _mm512_set1_epi32(load_i32(xc)));
            hi_sum[r] = _mm512_dpbusd_epi32(hi_sum[r], hi, _mm512_set1_epi32(load_i32(xc + 32)));
          }
        }
        const __m512i sc0 = byte_of(c < 2 ? s.sc_lo : s.sc_hi, (2 * c) % 4);
        const __m512i sc1 = byte_of(c < 2 ? s.sc_lo : s.sc_hi, (2 * c + 1) % 4);
        for (int r = 0; r < R; ++r)
          S[r] = _mm512_add_epi32(S[r], _mm512_add_epi32(_mm512_mullo_epi32(sc0, lo_sum[r]), _mm512_mullo_epi32(sc1, hi_sum[r])));
      }
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super)));
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + 32)));
      for (int r = 0; r < R; ++r) {
        const __m512 dxv = _mm512_set1_ps(x.scales[r][b]);
        acc[r][g] = _mm512_fmadd_ps(_mm512_mul_ps(d, dxv), _mm512_cvtepi32_ps(S[r]), acc[r][g]);
        acc[r][g] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dxv), _mm512_cvtepi32_ps(N[r]), acc[r][g]);
      }
    }
  });
}

template <bool kFifthBit>
void run(const MatmulArgs& a) {
  for_each_group_tile<1, TileShape{1, 1}, TileShape{4, 3}>(a, [&]<int R, int G>(int64_t m0, int64_t g0) { tile<kFifthBit, R, G>(a, m0, g0); });
}

}  // namespace

void matmul_q4_kx16_int8_avx512vnni(const MatmulArgs& a) { run<false>(a); }
void matmul_q5_kx16_int8_avx512vnni(const MatmulArgs& a) { run<true>(a); }

}  // namespace lemma::kernels::x86
