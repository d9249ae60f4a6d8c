// Interleaved Q4_Kx16 / Q5_Kx16 / Q6_Kx16 weights x Q8_K-style int8 activations with AVX2, for CPUs
// without AVX-512 VNNI: the files most people download (Q4_K_M = Q4_K + Q6_K, Q5_K_M = Q5_K + Q6_K)
// then run in the layout the VNNI kernels use (interleaved_blocks.h), with the same exact integer
// sums, so every output is bit for bit the oracle's (matmul_q*_kx16_int8_reference).
// Each 64-byte chunk (4 values of 16 rows) is read as two halves of 8 rows; one block runs half 0,
// then half 1 (the second pass finds the superblock in L1). Per 4 values, vpmaddubsw multiplies the
// unsigned codes by x's signed codes (pairs summed to int16) and vpmaddwd finishes the sums in int32:
// - Q4_K: u <= 15 and |x| <= 127, so a pair is at most 3810 and a 32-value sub-block's 8 steps stay
//   exact in int16; vpmaddwd by the sub-block's scale (as int16 pairs) gives sc_j S_j directly. Q5_K
//   (u <= 31, the fifth bits spread from their masks) widens after every 4 steps.
// - The mins term N = sum_j mn_j xs_j (xs_j x's 32-value code sums) is 4 vpmaddwd of (mn, mn')
//   int16 pairs against (xs, xs') pairs, as the VNNI kernel's vpdpwssd.
// - Q6_K: u = nibble | bit pair << 4 (<= 63): pairs up to 16002, so 2 steps per int16 sum; each
//   16-value sub-block's int32 sum starts at -32 s_j and is weighted by its int8 scale (vpmulld).
// Register tile: one group by up to 2 rows of x for M <= 2, else by up to 4 (Q4_K, Q5_K) or 2 (Q6_K)
// rows. Rows never depend on M.
// Software prefetch as the VNNI kernels: spread 8 KiB ahead over a superblock's work (these kernels
// read a superblock in several places, which the hardware prefetchers follow poorly).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/avx2/interleaved_avx2.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kValues = 256;
// A value 0..255 per lane as the int16 pair (v, v), vpmaddwd's multiplier for both halves of a lane.
__m256i as_pair(__m256i v) { return _mm256_or_si256(v, _mm256_slli_epi32(v, 16)); }

// ---- Q4_Kx16 / Q5_Kx16 ----------------------------------------------------------------------------

constexpr int64_t kHighAt45 = 2304;  // Q5_Kx16's fifth bits

template <bool kFifthBit>
constexpr int64_t kSuperBytes45 = kInterleaveRows * (kFifthBit ? 176 : 144);

// Half H's scales (sc) and mins (mn): bytes j of `lo` are sc/mn j, of `hi` j + 4 (ggml's 12-byte
// packing, on the 32-bit lanes of 8 rows).
struct Scales45 {
  __m256i sc_lo, sc_hi, mn_lo, mn_hi;
};
template <int H>
Scales45 unpack_scales(const uint8_t* super) {
  const auto at = [&](int w) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + 64 + 64 * w + 32 * H)); };
  const __m256i w0 = at(0), w1 = at(1), w2 = at(2);
  const __m256i six = _mm256_set1_epi32(0x3F3F3F3F), low4 = _mm256_set1_epi32(0x0F0F0F0F), top2 = _mm256_set1_epi32(0x30303030);
  return {_mm256_and_si256(w0, six),
          _mm256_or_si256(_mm256_and_si256(w2, low4), _mm256_and_si256(_mm256_srli_epi32(w0, 2), top2)),
          _mm256_and_si256(w1, six),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), low4), _mm256_and_si256(_mm256_srli_epi32(w1, 2), top2))};
}

// sc_{2c} (Odd = 0) or sc_{2c+1} (Odd = 1) as int16 pairs.
template <int C, int Odd>
__m256i scale_pair(const Scales45& s) {
  return as_pair(unsigned_byte<(2 * C + Odd) % 4>(C < 2 ? s.sc_lo : s.sc_hi));
}

template <bool kFifthBit, int R, int H>
void q45_half(const uint8_t* super, const Q8kRows<R>& x, int64_t b, bool prefetch, __m256i (&S)[R], __m256i (&N)[R]) {
  const Scales45 s = unpack_scales<H>(super);
  const __m256i even16 = _mm256_set1_epi32(0x00FF00FF), nibble = _mm256_set1_epi8(0x0F);
  for (int r = 0; r < R; ++r) {
    // N = sum_j mn_j xs_j: (mn_j, mn_j+2) int16 pairs against (xs_j, xs_j+2), as the VNNI kernel.
    int32_t xs[8];
    for (int j = 0; j < 8; ++j) xs[j] = x.sums[r][b * 16 + 2 * j] + x.sums[r][b * 16 + 2 * j + 1];
    const auto pair = [&](int j) {
      return _mm256_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(xs[j]) & 0xFFFFu) | (static_cast<uint32_t>(xs[j + 2]) << 16)));
    };
    N[r] = _mm256_madd_epi16(_mm256_and_si256(s.mn_lo, even16), pair(0));
    N[r] = _mm256_add_epi32(N[r], _mm256_madd_epi16(_mm256_and_si256(_mm256_srli_epi32(s.mn_lo, 8), even16), pair(1)));
    N[r] = _mm256_add_epi32(N[r], _mm256_madd_epi16(_mm256_and_si256(s.mn_hi, even16), pair(4)));
    N[r] = _mm256_add_epi32(N[r], _mm256_madd_epi16(_mm256_and_si256(_mm256_srli_epi32(s.mn_hi, 8), even16), pair(5)));
    S[r] = _mm256_setzero_si256();
  }
  constexpr int kStepsPerWiden = kFifthBit ? 4 : 8;  // int16 sums stay exact (see the top)
  const auto chunk = [&]<int C>() {
    __m256i lo_t[R], hi_t[R];
    for (int r = 0; r < R; ++r) lo_t[r] = hi_t[r] = _mm256_setzero_si256();
    const __m256i sc0 = scale_pair<C, 0>(s), sc1 = scale_pair<C, 1>(s);
    for (int p = 0; p < 8; ++p) {
      if (prefetch) prefetch_part(super, kSuperBytes45<kFifthBit>, 8 * C + p, 32);
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + 256 + 64 * (8 * C + p) + 32 * H));
      __m256i lo = _mm256_and_si256(v, nibble), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      if constexpr (kFifthBit) {
        lo = _mm256_or_si256(lo, mask_bytes(super + kHighAt45 + 8 * (16 * C + p) + 4 * H, 16));
        hi = _mm256_or_si256(hi, mask_bytes(super + kHighAt45 + 8 * (16 * C + 8 + p) + 4 * H, 16));
      }
      for (int r = 0; r < R; ++r) {
        const int8_t* xc = x.codes[r] + b * kValues + 64 * C + 4 * p;
        lo_t[r] = _mm256_add_epi16(lo_t[r], _mm256_maddubs_epi16(lo, broadcast4(xc)));
        hi_t[r] = _mm256_add_epi16(hi_t[r], _mm256_maddubs_epi16(hi, broadcast4(xc + 32)));
      }
      if ((p + 1) % kStepsPerWiden == 0) {
        for (int r = 0; r < R; ++r) {
          S[r] = _mm256_add_epi32(S[r], _mm256_add_epi32(_mm256_madd_epi16(lo_t[r], sc0), _mm256_madd_epi16(hi_t[r], sc1)));
          lo_t[r] = hi_t[r] = _mm256_setzero_si256();
        }
      }
    }
  };
  chunk.template operator()<0>();
  chunk.template operator()<1>();
  chunk.template operator()<2>();
  chunk.template operator()<3>();
}

template <bool kFifthBit, int R>
void q45_tile(const MatmulArgs& a, int64_t m0, int64_t g) {
  constexpr int64_t kSuper = kSuperBytes45<kFifthBit>;
  const int64_t blocks = a.K / kValues;
  const uint8_t* group = static_cast<const uint8_t*>(a.w) + g * blocks * kSuper;
  const Q8kRows<R> x(a.xq, a.K, m0);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const auto half = [&]<int H>(const uint8_t* super, int64_t b) {
    __m256i S[R], N[R];
    q45_half<kFifthBit, R, H>(super, x, b, /*prefetch=*/H == 0, S, N);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 16 * H)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 32 + 16 * H)));
    for (int r = 0; r < R; ++r) {
      const __m256 dx = _mm256_set1_ps(x.scales[r][b]);
      acc[r][H] = _mm256_fmadd_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(S[r]), acc[r][H]);
      acc[r][H] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(N[r]), acc[r][H]);
    }
  };
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* super = group + b * kSuper;
    half.template operator()<0>(super, b);
    half.template operator()<1>(super, b);
  }
  store_group<VecAvx2, R>(a, m0, g, [&](int r, int h) { return acc[r][h]; });
}

// ---- Q6_Kx16 --------------------------------------------------------------------------------------

constexpr int64_t kSuperBytes6 = kInterleaveRows * 210;
constexpr int64_t kScalesAt6 = 32, kLowAt6 = 288, kHighAt6 = 2336;

// (a & 0x0F) | b for every byte (b holds only bits 4 and 5).
__m256i join(__m256i a, __m256i b) { return _mm256_or_si256(_mm256_and_si256(a, _mm256_set1_epi8(0x0F)), b); }

template <int R, int H>
void q6_half(const uint8_t* super, const Q8kRows<R>& x, int64_t b, bool prefetch, __m256i (&S)[R]) {
  __m256i sc[4];
  for (int w = 0; w < 4; ++w) sc[w] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + kScalesAt6 + 64 * w + 32 * H));
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  for (int r = 0; r < R; ++r) S[r] = _mm256_setzero_si256();
  // Block half BH (values 128 BH ..), values 4 p .. 4 p + 3 of each of its quarters; p < 4 and p >= 4
  // are different 16-value sub-blocks (Q = p / 4), as the VNNI kernel's quarter passes.
  const auto quarter_pass = [&]<int BH, int Q>() {
    __m256i U[R][4];  // sub-blocks 8 BH + 2 k + Q, k = quarter
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 4; ++k) U[r][k] = _mm256_set1_epi32(-32 * x.sums[r][b * 16 + 8 * BH + 2 * k + Q]);
    for (int pair = 0; pair < 2; ++pair) {  // 2 steps per int16 sum (pairs up to 16002)
      __m256i t[R][4];
      for (int r = 0; r < R; ++r)
        for (int k = 0; k < 4; ++k) t[r][k] = _mm256_setzero_si256();
      for (int p = 4 * Q + 2 * pair; p < 4 * Q + 2 * pair + 2; ++p) {
        if (prefetch) prefetch_part(super, kSuperBytes6, 8 * BH + 4 * Q + p % 4, 16);
        const auto load = [&](int64_t at) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + at + 32 * H)); };
        const __m256i lo_a = load(kLowAt6 + 64 * (16 * BH + p)), lo_b = load(kLowAt6 + 64 * (16 * BH + 8 + p));
        const __m256i hi = load(kHighAt6 + 64 * (8 * BH + p));
        const __m256i u[4] = {join(lo_a, _mm256_and_si256(_mm256_slli_epi16(hi, 4), bits45)),
                              join(lo_b, _mm256_and_si256(_mm256_slli_epi16(hi, 2), bits45)),
                              join(_mm256_srli_epi16(lo_a, 4), _mm256_and_si256(hi, bits45)),
                              join(_mm256_srli_epi16(lo_b, 4), _mm256_and_si256(_mm256_srli_epi16(hi, 2), bits45))};
        for (int r = 0; r < R; ++r) {
          const int8_t* xc = x.codes[r] + b * kValues + 128 * BH + 4 * p;
          for (int k = 0; k < 4; ++k) t[r][k] = _mm256_add_epi16(t[r][k], _mm256_maddubs_epi16(u[k], broadcast4(xc + 32 * k)));
        }
      }
      for (int r = 0; r < R; ++r)
        for (int k = 0; k < 4; ++k) U[r][k] = _mm256_add_epi32(U[r][k], widen(t[r][k]));
    }
    // Sub-block j = 8 BH + 2 k + Q: scale byte j % 4 of chunk j / 4 = 2 BH + k / 2.
    const __m256i scale[4] = {VecAvx2::signed_byte<(2 * 0 + Q) % 4>(sc[2 * BH + 0]), VecAvx2::signed_byte<(2 * 1 + Q) % 4>(sc[2 * BH + 0]),
                              VecAvx2::signed_byte<(2 * 2 + Q) % 4>(sc[2 * BH + 1]), VecAvx2::signed_byte<(2 * 3 + Q) % 4>(sc[2 * BH + 1])};
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < 4; ++k) S[r] = _mm256_add_epi32(S[r], _mm256_mullo_epi32(scale[k], U[r][k]));
  };
  quarter_pass.template operator()<0, 0>();
  quarter_pass.template operator()<0, 1>();
  quarter_pass.template operator()<1, 0>();
  quarter_pass.template operator()<1, 1>();
}

template <int R>
void q6_tile(const MatmulArgs& a, int64_t m0, int64_t g) {
  const int64_t blocks = a.K / kValues;
  const uint8_t* group = static_cast<const uint8_t*>(a.w) + g * blocks * kSuperBytes6;
  const Q8kRows<R> x(a.xq, a.K, m0);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const auto half = [&]<int H>(const uint8_t* super, int64_t b) {
    __m256i S[R];
    q6_half<R, H>(super, x, b, /*prefetch=*/H == 0, S);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 16 * H)));
    for (int r = 0; r < R; ++r)
      acc[r][H] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.scales[r][b])), _mm256_cvtepi32_ps(S[r]), acc[r][H]);
  };
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* super = group + b * kSuperBytes6;
    half.template operator()<0>(super, b);
    half.template operator()<1>(super, b);
  }
  store_group<VecAvx2, R>(a, m0, g, [&](int r, int h) { return acc[r][h]; });
}

// Rows of x per register tile for M > 2, the fastest measured: 4 for Q4_K / Q5_K (their decoding
// shared by more rows), 2 for Q6_K (its four code vectors per step already fill the registers).
constexpr int kPrefillRows45 = 4, kPrefillRows6 = 2;

}  // namespace

void matmul_q4_kx16_int8_avx2(const MatmulArgs& a) {
  for_each_group<kPrefillRows45>(a, [&]<int R, int G>(int64_t m0, int64_t g) { q45_tile<false, R>(a, m0, g); });
}
void matmul_q5_kx16_int8_avx2(const MatmulArgs& a) {
  for_each_group<kPrefillRows45>(a, [&]<int R, int G>(int64_t m0, int64_t g) { q45_tile<true, R>(a, m0, g); });
}
void matmul_q6_kx16_int8_avx2(const MatmulArgs& a) {
  for_each_group<kPrefillRows6>(a, [&]<int R, int G>(int64_t m0, int64_t g) { q6_tile<R>(a, m0, g); });
}

}  // namespace lemma::kernels::x86
