// Compiled with -mavx2 -mfma only; called only when the CPU has AVX2.
#include <immintrin.h>

#include "lemma/bench/x86/probes.h"

namespace lemma::bench::x86 {

uint64_t read_sum_avx2(const void* data, size_t bytes) {
  const auto* p = static_cast<const __m256i*>(data);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i < bytes / sizeof(__m256i); i += 8) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(p + i));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(p + i + 1));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(p + i + 2));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(p + i + 3));
    a4 = _mm256_add_epi64(a4, _mm256_load_si256(p + i + 4));
    a5 = _mm256_add_epi64(a5, _mm256_load_si256(p + i + 5));
    a6 = _mm256_add_epi64(a6, _mm256_load_si256(p + i + 6));
    a7 = _mm256_add_epi64(a7, _mm256_load_si256(p + i + 7));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)),
                                     _mm256_add_epi64(_mm256_add_epi64(a4, a5), _mm256_add_epi64(a6, a7)));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

float fma_f32_avx2(int64_t iterations) {
  const __m256 scale = _mm256_set1_ps(0.999999f), shift = _mm256_set1_ps(1e-6f);
  __m256 c[10];
  for (int j = 0; j < 10; ++j) c[j] = _mm256_set1_ps(static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < 10; ++j) c[j] = _mm256_fmadd_ps(c[j], scale, shift);
  }
  __m256 s = c[0];
  for (int j = 1; j < 10; ++j) s = _mm256_add_ps(s, c[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[7];
}

}  // namespace lemma::bench::x86
