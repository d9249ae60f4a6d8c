// Compiled with AVX-512 flags only; called only when the CPU has AVX-512.
#include <immintrin.h>

#include "lemma/bench/x86/probes.h"

namespace lemma::bench::x86 {

float fma_f32_avx512(int64_t iterations) {
  const __m512 scale = _mm512_set1_ps(0.999999f), shift = _mm512_set1_ps(1e-6f);
  __m512 c[12];
  for (int j = 0; j < 12; ++j) c[j] = _mm512_set1_ps(static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < 12; ++j) c[j] = _mm512_fmadd_ps(c[j], scale, shift);
  }
  __m512 s = c[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, c[j]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace lemma::bench::x86
