// AVX2 helpers the row ops share: exp8 (Cephes-style range reduction, degree-6 polynomial, 2^n in two
// factors so n = 128 works, results below FLT_MIN flushed to 0), tails through padded buffers, double sums.
// Only files compiled with this ISA's flags include this; everything is in an anonymous namespace,
// so no object exports an ISA-flagged copy the linker could pick for other callers.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace lemma::kernels::x86 {
namespace {

constexpr float kExpHi = 88.7228394f;   // above: +inf
constexpr float kExpLo = -87.3365479f;  // below: 0 (flushed; the true result is subnormal)

[[maybe_unused]] __m256 pow2(__m256i n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23)); }

[[maybe_unused]] __m256 exp8(__m256 x_in) {
  // min/max return their second operand for NaN, so a NaN input stays NaN throughout.
  __m256 x = _mm256_min_ps(_mm256_set1_ps(kExpHi), x_in);
  x = _mm256_max_ps(_mm256_set1_ps(kExpLo), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);  // in [-126, 128]
  const __m256i half = _mm256_srai_epi32(ni, 1);
  __m256 result = _mm256_mul_ps(_mm256_mul_ps(y, pow2(half)), pow2(_mm256_sub_epi32(ni, half)));
  result = _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x_in, _mm256_set1_ps(kExpHi), _CMP_GT_OQ));
  result = _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x_in, _mm256_set1_ps(kExpLo), _CMP_LT_OQ));
  return result;
}

// Loads/stores the last partial vector through a buffer padded with `fill`.
[[maybe_unused]] __m256 load_tail(const float* p, int64_t count, float fill) {
  float buf[8] = {fill, fill, fill, fill, fill, fill, fill, fill};
  std::memcpy(buf, p, static_cast<size_t>(count) * 4);
  return _mm256_loadu_ps(buf);
}
[[maybe_unused]] void store_tail(float* p, __m256 v, int64_t count) {
  float buf[8];
  _mm256_storeu_ps(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(count) * 4);
}
[[maybe_unused]] __m256 load(const float* p, int64_t i, int64_t n, float fill) {
  return n - i >= 8 ? _mm256_loadu_ps(p + i) : load_tail(p + i, n - i, fill);
}
[[maybe_unused]] void store(float* p, int64_t i, int64_t n, __m256 v) {
  if (n - i >= 8) {
    _mm256_storeu_ps(p + i, v);
  } else {
    store_tail(p + i, v, n - i);
  }
}

[[maybe_unused]] void accumulate_double(__m256 v, __m256d& lo, __m256d& hi) {
  lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

[[maybe_unused]] double reduce_double(__m256d lo, __m256d hi) {
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(lo, hi));
  return ((lanes[0] + lanes[1]) + lanes[2]) + lanes[3];
}

}  // namespace
}  // namespace lemma::kernels::x86
