// Compiled with AVX-512 + AVX512_VNNI flags only; called only when the CPU has AVX512_VNNI.
#include <immintrin.h>

#include "lemma/bench/x86/probes.h"

namespace lemma::bench::x86 {

float dot_int8_avx512vnni(int64_t iterations) {
  // u8 1 x s8 1: each vpdpbusd adds 4 per lane; int32 wraps only after ~5e8 iterations.
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i c[12];
  for (int j = 0; j < 12; ++j) c[j] = _mm512_set1_epi32(j);
  for (int64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < 12; ++j) c[j] = _mm512_dpbusd_epi32(c[j], ones, ones);
  }
  __m512i s = c[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_epi32(s, c[j]);
  return static_cast<float>(_mm512_reduce_add_epi32(s));
}

}  // namespace lemma::bench::x86
