// Compiled with AVX-512 + AVX512_BF16 flags only; called only when the CPU has AVX512_BF16.
#include <immintrin.h>

#include "lemma/bench/x86/probes.h"

namespace lemma::bench::x86 {

float dot_bf16_avx512(int64_t iterations) {
  // bf16 pairs of 1e-3: each vdpbf16ps adds 2e-6 per lane, so nothing overflows or goes subnormal.
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  __m512 c[12];
  for (int j = 0; j < 12; ++j) c[j] = _mm512_set1_ps(static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
    for (int j = 0; j < 12; ++j) c[j] = _mm512_dpbf16_ps(c[j], a, a);
  }
  __m512 s = c[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, c[j]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace lemma::bench::x86
