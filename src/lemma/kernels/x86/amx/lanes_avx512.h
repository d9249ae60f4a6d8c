// The AMX-INT8 kernel's f32 scale step on AVX-512 (interleaved_amx_kernel.h): one row tile's
// 16 x 16 sums in 16 zmm registers for a whole chunk of K (kept there by full unrolling; a sum in
// memory costs a store per row and block, which competes with TILESTORED for the store port).
// Per row r: acc = fma(dw * dx[r], float(C[r]), acc), the same operations per output as ScalarLanes.
// Include only from sources compiled with the AVX-512 flags. Internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace lemma::kernels::x86::amx {
namespace {

struct Avx512Lanes {
  struct Acc {
    __m512 v[16];
  };
  // 16 f16 -> 16 f32 (VCVTPH2PS: exact, as f16_to_f32).
  static void f16x16(const uint8_t* src, float* dst) {
    _mm512_store_ps(dst, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src))));
  }
  static __mmask16 columns(int64_t cols) { return static_cast<__mmask16>((1u << cols) - 1u); }

  [[gnu::always_inline]] static void zero(Acc& acc) {
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) acc.v[r] = _mm512_setzero_ps();
  }
  [[gnu::always_inline]] static void load(Acc& acc, const float* y, int64_t y_stride, int64_t rows, int64_t cols) {
    const __mmask16 mask = columns(cols);
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) acc.v[r] = r < rows ? _mm512_maskz_loadu_ps(mask, y + r * y_stride) : _mm512_setzero_ps();
  }
  template <bool Mins>
  [[gnu::always_inline]] static void step(Acc& acc, const int32_t (*c)[16], const float* dw, const float* const* dx, const float* mw,
                                          const int32_t* const* xsum, int64_t b) {
    const __m512 w = _mm512_load_ps(dw);
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) {
      const __m512 d = _mm512_set1_ps(dx[r][b]);
      acc.v[r] = _mm512_fmadd_ps(_mm512_mul_ps(w, d), _mm512_cvtepi32_ps(_mm512_load_si512(c[r])), acc.v[r]);
      if constexpr (Mins) {
        const __m512 s = _mm512_cvtepi32_ps(_mm512_set1_epi32(xsum[r][b]));
        acc.v[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_load_ps(mw), d), s, acc.v[r]);
      }
    }
  }
  [[gnu::always_inline]] static void store(const Acc& acc, float* y, int64_t y_stride, int64_t rows, int64_t cols, const float* bias) {
    const __mmask16 mask = columns(cols);
    const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) {
      if (r >= rows) break;
      _mm512_mask_storeu_ps(y + r * y_stride, mask, bias != nullptr ? _mm512_add_ps(acc.v[r], b) : acc.v[r]);
    }
  }
};

}  // namespace
}  // namespace lemma::kernels::x86::amx
