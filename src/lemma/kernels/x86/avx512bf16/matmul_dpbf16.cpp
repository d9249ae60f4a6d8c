// y = x W^T for bf16 weights with AVX512_BF16: x is rounded to bf16 (RNE, vcvtne2ps2bf16 flushes
// subnormals) 32 values at a time in registers, then vdpbf16ps accumulates pairs into f32.
// Faster than widening W, but x loses precision, so it is opt-in (MatmulPrecision::kBf16Activations).
// Batch invariance as in matmul_avx512.cpp: one 16-lane accumulator per y[m, n], k in steps of 32.
#include <immintrin.h>

#include "lemma/kernels/x86/x86_kernels.h"
#include "lemma/kernels/x86/horizontal_sum.h"

namespace lemma::kernels::x86 {

namespace {

template <int MR, int NR>
void tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  __m512 acc[MR][NR];
  const float* x[MR];
  const uint16_t* w[NR];
  for (int i = 0; i < MR; ++i) {
    x[i] = a.x + (m0 + i) * a.x_stride;
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  for (int j = 0; j < NR; ++j) {
    w[j] = reinterpret_cast<const uint16_t*>(static_cast<const char*>(a.w) + (n0 + j) * a.w_row_bytes);
  }
  int64_t k = 0;
  for (; k + 32 <= a.K; k += 32) {
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = (__m512bh)_mm512_loadu_si512(w[j] + k);
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x[i] + k + 16), _mm512_loadu_ps(x[i] + k));
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv, wv[j]);
    }
  }
  if (k < a.K) {
    const int r = static_cast<int>(a.K - k);
    const __mmask16 lo = r >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << r) - 1u);
    const __mmask16 hi = r > 16 ? static_cast<__mmask16>((1u << (r - 16)) - 1u) : static_cast<__mmask16>(0);
    const __mmask32 wm = static_cast<__mmask32>((1u << r) - 1u);
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = (__m512bh)_mm512_maskz_loadu_epi16(wm, w[j] + k);
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, x[i] + k + 16),
                                              _mm512_maskz_loadu_ps(lo, x[i] + k));
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv, wv[j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    float* y = a.y + (m0 + i) * a.y_stride + n0;
    for (int j = 0; j < NR; ++j) {
      float sum = reduce16(acc[i][j]);
      if (a.bias != nullptr) sum += a.bias[n0 + j];
      y[j] = sum;
    }
  }
}

constexpr int kMr = 4;
constexpr int kNr = 4;
constexpr int64_t kNBlock = 32;

using TileFn = void (*)(const MatmulArgs&, int64_t, int64_t);

template <int MR>
TileFn pick_nr(int nr) {
  switch (nr) {
    case 1: return &tile<MR, 1>;
    case 2: return &tile<MR, 2>;
    case 3: return &tile<MR, 3>;
    default: return &tile<MR, 4>;
  }
}

TileFn pick_tile(int mr, int nr) {
  switch (mr) {
    case 1: return pick_nr<1>(nr);
    case 2: return pick_nr<2>(nr);
    case 3: return pick_nr<3>(nr);
    default: return pick_nr<4>(nr);
  }
}

}  // namespace

void matmul_bf16_dpbf16_avx512(const MatmulArgs& a) {
  for (int64_t nb = 0; nb < a.N; nb += kNBlock) {
    const int64_t n_end = nb + kNBlock < a.N ? nb + kNBlock : a.N;
    for (int64_t m0 = 0; m0 < a.M; m0 += kMr) {
      const int mr = static_cast<int>(a.M - m0 < kMr ? a.M - m0 : kMr);
      for (int64_t n0 = nb; n0 < n_end; n0 += kNr) {
        const int nr = static_cast<int>(n_end - n0 < kNr ? n_end - n0 : kNr);
        pick_tile(mr, nr)(a, m0, n0);
      }
    }
  }
}

}  // namespace lemma::kernels::x86
