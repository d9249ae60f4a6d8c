// AVX-512 helpers the row ops share: exp16 (Cephes-style range reduction and degree-6 polynomial,
// scaled with vscalefps: correct overflow, underflow and subnormals), tail masks, double sums.
// Only files compiled with this ISA's flags include this; everything is in an anonymous namespace,
// so no object exports an ISA-flagged copy the linker could pick for other callers.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lemma::kernels::x86 {
namespace {

[[maybe_unused]] __mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << remaining) - 1u);
}

[[maybe_unused]] __m512 exp16(__m512 x) {
  // Clamp so the reduction stays exact; min/max return their second operand for NaN, keeping it.
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

// Sum of 16 floats widened to double, added into two accumulators.
[[maybe_unused]] void accumulate_double(__m512 v, __m512d& lo, __m512d& hi) {
  lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

[[maybe_unused]] double reduce_double(__m512d lo, __m512d hi) {
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, _mm512_add_pd(lo, hi));
  double sum = 0.0;
  for (double v : lanes) sum += v;
  return sum;
}

}  // namespace
}  // namespace lemma::kernels::x86
