// Pieces the AVX2 and AVX-512 VNNI K-quant int8-activation kernels (q8k_activations.h) share: the
// f16 scale read, the unpacked scales and mins, the formats' sizes and the 8-lane f32 part of a block
// (the same instructions in both files, so their bits agree). Included only by per-ISA sources compiled with
// AVX2 or more; `static inline` keeps each copy local to its object file (see horizontal_sum.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/quant_blocks.h"

namespace lemma::kernels::x86 {

static inline float f16_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

// A Q4_K/Q5_K block's d, dmin (bytes 0-3), scales sc as int16 sc_0..sc_7 and mins as int16
// (mn_0, mn_0, mn_1, mn_1, ..., mn_7, mn_7): per 16-value group, the multiplier of x's code sums.
struct K4Scales {
  __m128i sc;
  __m256i mins;
  float d, dmin;
};

// unpack_k4_scales on 32-bit words (bytes j of each word in parallel), so the bytes reach the
// vector registers without a round trip through memory (narrow stores then a wide load stall).
static inline K4Scales k4_scales(const uint8_t* block) {
  uint32_t w[3];
  std::memcpy(w, block + 4, 12);
  const uint32_t sc_lo = w[0] & 0x3F3F3F3Fu, mn_lo = w[1] & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (w[2] & 0x0F0F0F0Fu) | ((w[0] >> 2) & 0x30303030u);  // bits 6-7 -> 4-5
  const uint32_t mn_hi = ((w[2] >> 4) & 0x0F0F0F0Fu) | ((w[1] >> 2) & 0x30303030u);
  const __m128i sc8 = _mm_cvtsi64_si128(static_cast<int64_t>(sc_lo | (uint64_t{sc_hi} << 32)));
  const __m128i mn8 = _mm_cvtsi64_si128(static_cast<int64_t>(mn_lo | (uint64_t{mn_hi} << 32)));
  return {_mm_cvtepu8_epi16(sc8), _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8)), f16_at(block), f16_at(block + 2)};
}

// With mins (Q4_K/Q5_K/Q2_K): acc + d d_x S - dmin d_x N, N_l = mn_2l s_2l + mn_2l+1 s_2l+1;
// `mins` holds int16 mn_0..mn_15, `sums` x's 16 s_g.
static inline __m256 accumulate_with_mins(float d, float dmin, __m256i mins, __m256i S, __m256i sums, float dx, __m256 acc) {
  const __m256i N = _mm256_madd_epi16(sums, mins);
  acc = _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(S), acc);
  return _mm256_fnmadd_ps(_mm256_set1_ps(dmin * dx), _mm256_cvtepi32_ps(N), acc);
}

// Without (Q6_K/Q3_K, whose offset is already inside S): acc + d d_x S.
static inline __m256 accumulate(float d, __m256i S, float dx, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(S), acc);
}

// The block's f32 part, with mins (Q4_K/Q5_K/Q2_K) or without (Q6_K/Q3_K: mins unused).
template <bool kMins>
static inline __m256 finish_block(float d, float dmin, __m256i mins, __m256i S, __m256i sums, float dx, __m256 acc) {
  if constexpr (kMins) {
    return accumulate_with_mins(d, dmin, mins, S, sums, dx, acc);
  } else {
    return accumulate(d, S, dx, acc);
  }
}

// Q3_K's 16 scales (with their -32) as int16: unpack_k3_scale on 32-bit words (4 scales each).
static inline __m256i k3_scales(const uint8_t* packed) {
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  uint32_t sc[4];
  for (int i = 0; i < 4; ++i) {  // scales 4i..4i+3: nibble i / 2 of bytes 4(i % 2).., top bits 2i of bytes 8..11
    const uint32_t low = (w[i % 2] >> (4 * (i / 2))) & 0x0F0F0F0Fu;
    const uint32_t high = (w[2] >> (2 * i)) & 0x03030303u;
    sc[i] = low | (high << 4);
  }
  const __m128i bytes = _mm_set_epi32(static_cast<int>(sc[3]), static_cast<int>(sc[2]), static_cast<int>(sc[1]), static_cast<int>(sc[0]));
  return _mm256_cvtepi8_epi16(_mm_sub_epi8(bytes, _mm_set1_epi8(32)));
}

// Q2_K's 16 scale bytes -> int16 scales (low nibbles) and mins (high nibbles).
static inline void k2_scales(const uint8_t* bytes, __m256i* sc, __m256i* mn) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  const __m128i low = _mm_set1_epi8(0x0F);
  *sc = _mm256_cvtepu8_epi16(_mm_and_si128(v, low));
  *mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), low));
}

// The formats' block sizes, code offsets o (S sums (u - o) q) and f32 parts, the same for both ISAs;
// each ISA file derives its decoder (Prep, prepare, codes, scales) from these. finish reads the
// decoder's Prep: k (Q4_K/Q5_K), d (Q6_K), or d, dmin and mins (Q2_K/Q3_K). In an anonymous
// namespace, as every helper here: no copy compiled with AVX-512 flags is shared with AVX2 callers.
namespace {
template <bool Q5>
struct Q45KFormat {
  static constexpr int64_t kBytes = Q5 ? 176 : 144;
  static constexpr int kQs = Q5 ? 48 : 16;  // offset of qs (after d, dmin, scales[12] and qh[32])
  static constexpr int kOffset = 0;
  template <class Prep>
  static __m256 finish(const Prep& p, __m256i S, __m256i sums, float dx, __m256 acc) {
    return accumulate_with_mins(p.k.d, p.k.dmin, p.k.mins, S, sums, dx, acc);
  }
};
struct Q6KFormat {
  static constexpr int64_t kBytes = 210;
  static constexpr int kOffset = 32;
  template <class Prep>
  static __m256 finish(const Prep& p, __m256i S, __m256i, float dx, __m256 acc) { return accumulate(p.d, S, dx, acc); }
};
template <bool Q3>
struct Q23KFormat {
  static constexpr int64_t kBytes = Q3 ? 110 : 84;
  static constexpr int kOffset = Q3 ? 4 : 0;
  template <class Prep>
  static __m256 finish(const Prep& p, __m256i S, __m256i sums, float dx, __m256 acc) {
    return finish_block<!Q3>(p.d, p.dmin, p.mins, S, sums, dx, acc);
  }
};
}  // namespace

}  // namespace lemma::kernels::x86
