// GGUF Q4_K/Q5_K/Q6_K/Q2_K/Q3_K weights x Q8_K-style int8 activations (q8k_activations.h) with
// AVX-512 VNNI: the weight formats' decoders for kquant_tile (kquant_int8_tile.h), register tiles of
// up to 4 rows of x by 2 rows of W. Per pair of 32-value chunks each W row is decoded once to 64
// unsigned codes and the chunks' int16 scales; vpdpwssd multiplies the pair sums by the scales into
// 16 int32 lanes (chunk 2p in lanes 0..7, 2p + 1 in 8..15), whose halves add (exact) to the
// reference's S_l at the block's end; the f32 part runs on 8 lanes exactly as the AVX2 kernel's.
#include <immintrin.h>

#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/kquant_int8_parts.h"
#include "lemma/kernels/x86/kquant_int8_tile.h"
#include "lemma/kernels/x86/vec/vec_avx512.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int kMaxRows = 4;
constexpr int kMaxCols = 2;

__m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// int16 index vector [i0 x8, i1 x8, i2 x8, i3 x8] for vpermw.
__m512i pick4(int i0, int i1, int i2, int i3) {
  const __m256i lo = _mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(i0)), _mm_set1_epi16(static_cast<short>(i1)));
  const __m256i hi = _mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(i2)), _mm_set1_epi16(static_cast<short>(i3)));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// Chunks 2p and 2p + 1's scales from 16 int16 group scales: [sc_4p, sc_4p+1, sc_4p+2, sc_4p+3] x8.
__m512i g16_pair_scales(__m256i sc, int pair) {
  return _mm512_permutexvar_epi16(pick4(4 * pair, 4 * pair + 1, 4 * pair + 2, 4 * pair + 3), _mm512_castsi256_si512(sc));
}

// Per-chunk 32-bit masks of bit c of 32 bytes (Q5_K's qh, Q3_K's hmask), c = 0..7.
void bit_masks(const uint8_t* bytes, uint32_t masks[8]) {
  const __m256i v = load256(bytes);
  for (int c = 0; c < 8; ++c) masks[c] = _mm256_test_epi8_mask(v, _mm256_set1_epi8(static_cast<char>(1 << c)));
}

// Chunks 2p and 2p + 1's masks as one 64-bit mask.
__mmask64 pair_mask(const uint32_t masks[8], int pair) {
  return static_cast<__mmask64>(masks[2 * pair]) | (static_cast<__mmask64>(masks[2 * pair + 1]) << 32);
}

// Q4_K (Q5 = false) and Q5_K: pair p is chunks 2p (low nibbles of qs[32p..]) and 2p + 1 (high).
template <bool Q5>
struct Q45K : Q45KFormat<Q5> {
  using Q45KFormat<Q5>::kQs;
  struct Prep {
    const uint8_t* qs;
    uint32_t qh[8];  // qh bit c of the 32 bytes, as a 32-bit mask per chunk c
    K4Scales k;
  };
  static Prep prepare(const uint8_t* block) {
    Prep p;
    p.k = k4_scales(block);
    p.qs = block + kQs;
    if constexpr (Q5) bit_masks(block + 16, p.qh);
    return p;
  }
  static __m512i codes(const Prep& p, int pair) {
    const __m256i q = load256(p.qs + 32 * pair);
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
    __m512i u = _mm512_and_si512(both, _mm512_set1_epi8(0x0F));
    if constexpr (Q5) {
      u = _mm512_mask_add_epi8(u, pair_mask(p.qh, pair), u, _mm512_set1_epi8(16));
    }
    return u;
  }
  static __m512i scales(const Prep& p, int pair) {
    return _mm512_permutexvar_epi16(pick4(2 * pair, 2 * pair, 2 * pair + 1, 2 * pair + 1), _mm512_castsi128_si512(p.k.sc));
  }
};

// Q6_K: pair p of half h = p / 2 is chunks 4h + 2(p % 2) and + 1: ql[64h..64h+63]'s low (p even)
// or high nibbles, with qh[32h..] bits 4(p % 2) + {0, 1} and + {2, 3}.
struct Q6K : Q6KFormat {
  struct Prep {
    const uint8_t* ql;
    const uint8_t* qh;
    __m256i sc;  // int16 sc_0..sc_15
    float d;
  };
  static Prep prepare(const uint8_t* block) {
    Prep p;
    p.ql = block;
    p.qh = block + 128;
    p.sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192)));
    p.d = f16_at(block + 208);
    return p;
  }
  static __m512i codes(const Prep& p, int pair) {
    const int h = pair / 2, odd = pair % 2;
    const __m512i ql = _mm512_loadu_si512(p.ql + 64 * h);
    const __m512i low = _mm512_and_si512(odd ? _mm512_srli_epi16(ql, 4) : ql, _mm512_set1_epi8(0x0F));
    const __m512i qh = _mm512_broadcast_i64x4(load256(p.qh + 32 * h));
    const __m512i shift = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(4 * odd)),
                                             _mm256_set1_epi16(static_cast<short>(4 * odd + 2)), 1);
    const __m512i high = _mm512_and_si512(_mm512_srlv_epi16(qh, shift), _mm512_set1_epi8(3));
    return _mm512_or_si512(low, _mm512_slli_epi16(high, 4));
  }
  static __m512i scales(const Prep& p, int pair) { return g16_pair_scales(p.sc, pair); }
};

// Q2_K (Q3 = false) and Q3_K: pair p is chunks 2p, 2p + 1 = bits 4(p % 2) + {0, 1} and + {2, 3} of
// qs[32h..] (h = p / 2); Q3_K adds bit c of hmask as u's bit 2 (value u - 4); 16 groups of 16.
template <bool Q3>
struct Q23K : Q23KFormat<Q3> {
  struct Prep {
    const uint8_t* qs;
    uint32_t hmask[8];
    __m256i sc, mins;  // int16 per group
    float d, dmin;
  };
  static Prep prepare(const uint8_t* block) {
    Prep p;
    if constexpr (Q3) {
      bit_masks(block, p.hmask);
      p.qs = block + 32;
      p.sc = k3_scales(block + 96);
      p.d = f16_at(block + 108);
    } else {
      k2_scales(block, &p.sc, &p.mins);
      p.qs = block + 16;
      p.d = f16_at(block + 80);
      p.dmin = f16_at(block + 82);
    }
    return p;
  }
  static __m512i codes(const Prep& p, int pair) {
    const int odd = pair % 2;
    const __m512i q = _mm512_broadcast_i64x4(load256(p.qs + 32 * (pair / 2)));
    const __m512i shift = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(4 * odd)),
                                             _mm256_set1_epi16(static_cast<short>(4 * odd + 2)), 1);
    __m512i u = _mm512_and_si512(_mm512_srlv_epi16(q, shift), _mm512_set1_epi8(3));
    if constexpr (Q3) u = _mm512_mask_add_epi8(u, pair_mask(p.hmask, pair), u, _mm512_set1_epi8(4));
    return u;
  }
  static __m512i scales(const Prep& p, int pair) { return g16_pair_scales(p.sc, pair); }
};

// kquant_tile's integer steps on AVX-512 VNNI: 64 codes (chunk 2p in lanes 0..7 of each 128 bits,
// 2p + 1 in 8..15), vpmaddubsw, vpdpwssd by the scales; the two halves add (exactly) at the end.
struct Dot : VecAvx512 {
  static constexpr int kCodes = 64;
  static I load_codes(const int8_t* p) { return load_i_aligned(p); }
  static I accumulate(I S, I pairs, I sc) { return _mm512_dpwssd_epi32(S, pairs, sc); }
  static __m256i fold(I S) { return _mm256_add_epi32(_mm512_castsi512_si256(S), _mm512_extracti64x4_epi64(S, 1)); }
};

}  // namespace

void matmul_q4_k_int8_avx512vnni(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q45K<false>>(a); }
void matmul_q5_k_int8_avx512vnni(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q45K<true>>(a); }
void matmul_q6_k_int8_avx512vnni(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q6K>(a); }
void matmul_q2_k_int8_avx512vnni(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q23K<false>>(a); }
void matmul_q3_k_int8_avx512vnni(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q23K<true>>(a); }

}  // namespace lemma::kernels::x86
