// Pieces the AVX2 and AVX-512 VNNI K-quant int8-activation kernels (q8k_activations.h) share: the
// f16 scale read, Q4_K/Q5_K's unpacked scales and mins, and the 8-lane f32 part of a block (the same
// instructions in both files, so their bits agree). Included only by per-ISA sources compiled with
// AVX2 or more; `static inline` keeps each copy local to its object file (see horizontal_sum.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/q8k_activations.h"

namespace lemma::kernels::x86 {

static inline float f16_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

// A Q4_K/Q5_K block's d, dmin (bytes 0-3), scales sc as int16 sc_0..sc_7 and mins as int16
// (mn_0, mn_0, mn_1, mn_1, ..., mn_7, mn_7), the multiplier of x's 16 code sums.
struct K4Scales {
  __m128i sc;
  __m256i mins;
  float d, dmin;
};

static inline K4Scales k4_scales(const uint8_t* block) {
  alignas(16) uint8_t sc[16] = {}, mn[16] = {};
  unpack_k4_scales(block + 4, sc, mn);
  const __m128i mn8 = _mm_load_si128(reinterpret_cast<const __m128i*>(mn));
  return {_mm_cvtepu8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(sc))),
          _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8)), f16_at(block), f16_at(block + 2)};
}

// Q4_K/Q5_K: acc + d d_x S - dmin d_x N, N_l = mn_l (s_2l + s_2l+1); `sums` holds x's 16 s_g.
static inline __m256 k4_accumulate(const K4Scales& k, __m256i S, __m256i sums, float dx, __m256 acc) {
  const __m256i N = _mm256_madd_epi16(sums, k.mins);
  acc = _mm256_fmadd_ps(_mm256_set1_ps(k.d * dx), _mm256_cvtepi32_ps(S), acc);
  return _mm256_fnmadd_ps(_mm256_set1_ps(k.dmin * dx), _mm256_cvtepi32_ps(N), acc);
}

// Q6_K: acc + d d_x S (the -32 already inside S).
static inline __m256 k6_accumulate(float d, __m256i S, float dx, __m256 acc) {
  return _mm256_fmadd_ps(_mm256_set1_ps(d * dx), _mm256_cvtepi32_ps(S), acc);
}

}  // namespace lemma::kernels::x86
