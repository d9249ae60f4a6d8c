// Fixed-order horizontal sums shared by the x86 kernels: lane i is paired with lane i + half at each
// step, so every kernel that uses them reduces in the same order (batch invariance relies on it).
// Included only by per-ISA sources; `static inline` keeps each copy local to its object file, so no
// weak symbol compiled with AVX flags can be picked for baseline callers.
#pragma once

#include <immintrin.h>

namespace lemma::kernels {

// 8 -> 4 -> 2 -> 1 lanes.
static inline float reduce8(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

#ifdef __AVX512F__
// 16 -> 8 lanes, then reduce8.
static inline float reduce16(__m512 v) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  return reduce8(_mm256_add_ps(lo, hi));
}
#endif

}  // namespace lemma::kernels
