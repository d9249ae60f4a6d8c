// GGUF Q4_K/Q5_K/Q6_K/Q2_K/Q3_K weights x Q8_K-style int8 activations (q8k_activations.h), AVX2:
// the weight formats' decoders (32-value chunks) for kquant_tile (kquant_int8_tile.h), register tiles
// of up to 2 rows of x by 2 rows of W. vpmaddwd by the chunk's int16 scales widens lane l to
// sc * (sum of values 4l..4l+3): the reference's S_l after 8 chunks. The min term is one vpmaddwd of
// x's 16 code sums by the mins; then the block's one or two FMAs into 8 f32 lanes.
#include <immintrin.h>

#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/kquant_int8_parts.h"
#include "lemma/kernels/x86/kquant_int8_tile.h"
#include "lemma/kernels/x86/vec/vec_avx2.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int kMaxRows = 2;
constexpr int kMaxCols = 2;

__m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Q4_K (Q5 = false) and Q5_K: 8 chunks of 32 values, chunk c has scale sc_c and min mn_c.
template <bool Q5>
struct Q45K : Q45KFormat<Q5> {
  using Q45KFormat<Q5>::kQs;
  struct Prep {
    const uint8_t* qs;
    __m256i qh;
    __m256i sc;  // int16 sc_0..sc_7 in both 128-bit lanes
    K4Scales k;
  };
  static Prep prepare(const uint8_t* block) {
    Prep p;
    p.k = k4_scales(block);
    p.sc = _mm256_broadcastsi128_si256(p.k.sc);
    p.qs = block + kQs;
    if constexpr (Q5) p.qh = load256(block + 16);
    return p;
  }
  static __m256i codes(const Prep& p, int c) {
    const __m256i q = load256(p.qs + 32 * (c / 2));
    __m256i u = _mm256_and_si256(c % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0x0F));
    if constexpr (Q5) {
      const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << c));
      const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(p.qh, bit), bit);
      u = _mm256_or_si256(u, _mm256_and_si256(set, _mm256_set1_epi8(16)));
    }
    return u;
  }
  static __m256i scales(const Prep& p, int c) {
    return _mm256_shuffle_epi8(p.sc, _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * c)));
  }
};

// 16 int16 group scales sc_0..sc_15 arranged for vpshufb: chunk c's are [sc_2c x8 | sc_2c+1 x8].
struct G16Scales {
  __m256i lo, hi;  // sc_0..7 / sc_8..15 in both 128-bit lanes
};
G16Scales g16_scales(__m256i sc) { return {_mm256_permute2x128_si256(sc, sc, 0x00), _mm256_permute2x128_si256(sc, sc, 0x11)}; }
__m256i g16_chunk_scales(const G16Scales& g, int c) {
  const int part = c % 4;  // groups 2c, 2c + 1 are int16 2 part, 2 part + 1 of lo (c < 4) or hi
  const __m256i pick = _mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(0x0100 + 0x0404 * part)),
                                         _mm_set1_epi16(static_cast<short>(0x0302 + 0x0404 * part)));
  return _mm256_shuffle_epi8(c < 4 ? g.lo : g.hi, pick);
}

// Q6_K: chunk c of 32 values holds groups 2c and 2c + 1 (int8 scales); codes 0..63 stand for u - 32.
struct Q6K : Q6KFormat {
  struct Prep {
    const uint8_t* ql;
    const uint8_t* qh;
    G16Scales sc;
    float d;
  };
  static Prep prepare(const uint8_t* block) {
    Prep p;
    p.ql = block;
    p.qh = block + 128;
    p.sc = g16_scales(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192))));
    p.d = f16_at(block + 208);
    return p;
  }
  static __m256i codes(const Prep& p, int c) {
    const int h = c / 4, part = c % 4;  // values 128h + 32 part: ql byte half part % 2, nibble part / 2
    const __m256i ql = load256(p.ql + 64 * h + 32 * (part % 2));
    const __m256i low = _mm256_and_si256(part / 2 ? _mm256_srli_epi16(ql, 4) : ql, _mm256_set1_epi8(0x0F));
    const __m256i qh = load256(p.qh + 32 * h);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * part), _mm256_set1_epi8(3));
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
  }
  static __m256i scales(const Prep& p, int c) { return g16_chunk_scales(p.sc, c); }
};

// Q2_K (Q3 = false) and Q3_K: chunk c = 4h + f is bits 2f of qs[32h..32h+31]; Q3_K adds bit c of
// hmask as u's bit 2 (value u - 4); 16 groups of 16.
template <bool Q3>
struct Q23K : Q23KFormat<Q3> {
  struct Prep {
    const uint8_t* qs;
    __m256i hmask;
    G16Scales sc;
    __m256i mins;
    float d, dmin;
  };
  static Prep prepare(const uint8_t* block) {
    Prep p;
    if constexpr (Q3) {
      p.hmask = load256(block);
      p.qs = block + 32;
      p.sc = g16_scales(k3_scales(block + 96));
      p.d = f16_at(block + 108);
    } else {
      __m256i sc;
      k2_scales(block, &sc, &p.mins);
      p.sc = g16_scales(sc);
      p.qs = block + 16;
      p.d = f16_at(block + 80);
      p.dmin = f16_at(block + 82);
    }
    return p;
  }
  static __m256i codes(const Prep& p, int c) {
    const __m256i q = load256(p.qs + 32 * (c / 4));
    __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c % 4)), _mm256_set1_epi8(3));
    if constexpr (Q3) {
      const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << c));
      const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(p.hmask, bit), bit);
      u = _mm256_or_si256(u, _mm256_and_si256(set, _mm256_set1_epi8(4)));
    }
    return u;
  }
  static __m256i scales(const Prep& p, int c) { return g16_chunk_scales(p.sc, c); }
};

// kquant_tile's integer steps on AVX2: 32 codes, vpmaddubsw, then vpmaddwd by the chunk's scales.
struct Dot : VecAvx2 {
  static constexpr int kCodes = 32;
  static I load_codes(const int8_t* p) { return load_i(p); }
  static I accumulate(I S, I pairs, I sc) { return add_i32(S, _mm256_madd_epi16(pairs, sc)); }
  static __m256i fold(I S) { return S; }
};

}  // namespace

void matmul_q4_k_int8_avx2(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q45K<false>>(a); }
void matmul_q5_k_int8_avx2(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q45K<true>>(a); }
void matmul_q6_k_int8_avx2(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q6K>(a); }
void matmul_q2_k_int8_avx2(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q23K<false>>(a); }
void matmul_q3_k_int8_avx2(const MatmulArgs& a) { kquant_matmul<Dot, kMaxRows, kMaxCols, Q23K<true>>(a); }

}  // namespace lemma::kernels::x86
