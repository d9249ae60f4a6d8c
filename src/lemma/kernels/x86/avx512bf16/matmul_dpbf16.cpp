// y = x W^T for bf16 weights with AVX512_BF16: x arrives already rounded to bf16 (args.xq,
// bf16_activations.h, written once per call by pack_x_bf16_avx512), and vdpbf16ps accumulates
// pairs of products into f32.
// Batch invariance: every y[m, n] is one 16-lane accumulator fed by vdpbf16ps over k in steps of
// 32 (x zero-padded past K, W masked), then the fixed reduce16 (+ bias), whatever the register
// tile (m, n) falls in or the cache block; tiles and blocks only decide which outputs are computed
// together and in which order, never how one is.
// Blocking: W is cut into blocks of rows (dpbf16_block_rows, matmul_blocking.h) that stay in L2
// while every 4-row panel of x (in L1) passes over them in 4x6 register tiles (24 accumulators,
// 6 W vectors, 1 x vector: 31 of the 32 zmm registers). The first pass over a block reads it from
// memory and prefetches the next tile's rows (as matmul_avx512.cpp does); the later passes hit L2.
#include <immintrin.h>

#include <utility>

#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/matmul_blocking.h"
#include "lemma/kernels/x86/horizontal_sum.h"
#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int kMr = 4;
constexpr int kNr = 6;

template <int MR, int NR, bool kPrefetch>
void tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  const int64_t xs = bf16_x_stride(a.K);
  __m512 acc[MR][NR];
  const uint16_t* x[MR];
  const uint16_t* w[NR];
  const char* next[NR];  // row j + NR (the next tile's rows), or row j itself past the end of W
  for (int i = 0; i < MR; ++i) {
    x[i] = static_cast<const uint16_t*>(a.xq) + (m0 + i) * xs;
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  for (int j = 0; j < NR; ++j) {
    const char* row = static_cast<const char*>(a.w) + (n0 + j) * a.w_row_bytes;
    w[j] = reinterpret_cast<const uint16_t*>(row);
    next[j] = n0 + NR + j < a.N ? row + NR * a.w_row_bytes : row;
  }
  const int64_t k_whole = a.K / 32 * 32;
  int64_t k = 0;
  for (; k < k_whole; k += 32) {
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j) {
      if constexpr (kPrefetch) _mm_prefetch(next[j] + 2 * k, _MM_HINT_T0);
      wv[j] = (__m512bh)_mm512_loadu_si512(w[j] + k);
    }
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = (__m512bh)_mm512_load_si512(x[i] + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv, wv[j]);
    }
  }
  if (k < a.K) {
    const __mmask32 wm = static_cast<__mmask32>((uint64_t{1} << (a.K - k)) - 1u);
    __m512bh wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = (__m512bh)_mm512_maskz_loadu_epi16(wm, w[j] + k);
    for (int i = 0; i < MR; ++i) {
      const __m512bh xv = (__m512bh)_mm512_load_si512(x[i] + k);
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

using TileFn = void (*)(const MatmulArgs&, int64_t, int64_t);

template <int MR, bool kPrefetch, int... NR>
constexpr TileFn pick_nr(int nr, std::integer_sequence<int, NR...>) {
  TileFn fn = nullptr;
  ((fn = (nr == NR + 1 ? &tile<MR, NR + 1, kPrefetch> : fn)), ...);
  return fn;
}

template <bool kPrefetch>
TileFn pick_tile(int mr, int nr) {
  const auto nrs = std::make_integer_sequence<int, kNr>{};
  switch (mr) {
    case 1: return pick_nr<1, kPrefetch>(nr, nrs);
    case 2: return pick_nr<2, kPrefetch>(nr, nrs);
    case 3: return pick_nr<3, kPrefetch>(nr, nrs);
    default: return pick_nr<4, kPrefetch>(nr, nrs);
  }
}

}  // namespace

void pack_x_bf16_avx512(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t xs = bf16_x_stride(K);
  for (int64_t m = 0; m < M; ++m) {
    const float* src = x + m * x_stride;
    auto* dst = static_cast<uint16_t*>(out) + m * xs;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + k + 16), _mm512_loadu_ps(src + k));
      _mm512_store_si512(dst + k, (__m512i)v);
    }
    if (k < xs) {  // the tail and the zero padding up to the stride
      const int r = static_cast<int>(K - k);
      const auto lo = static_cast<__mmask16>(r >= 16 ? 0xFFFF : (1u << r) - 1u);
      const auto hi = static_cast<__mmask16>(r > 16 ? (1u << (r - 16)) - 1u : 0u);
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, src + k + 16), _mm512_maskz_loadu_ps(lo, src + k));
      _mm512_store_si512(dst + k, (__m512i)v);
    }
  }
}

void matmul_bf16_dpbf16_avx512_blocked(const MatmulArgs& a, int64_t block_rows) {
  for (int64_t nb = 0; nb < a.N; nb += block_rows) {
    const int64_t n_end = nb + block_rows < a.N ? nb + block_rows : a.N;
    for (int64_t m0 = 0; m0 < a.M; m0 += kMr) {
      const int mr = static_cast<int>(a.M - m0 < kMr ? a.M - m0 : kMr);
      for (int64_t n0 = nb; n0 < n_end; n0 += kNr) {
        const int nr = static_cast<int>(n_end - n0 < kNr ? n_end - n0 : kNr);
        // Only the first pass over this block of W reads it from memory; later ones hit cache.
        (m0 == 0 ? pick_tile<true>(mr, nr) : pick_tile<false>(mr, nr))(a, m0, n0);
      }
    }
  }
}

void matmul_bf16_dpbf16_avx512(const MatmulArgs& a) {
  matmul_bf16_dpbf16_avx512_blocked(a, dpbf16_block_rows(a.M, a.K));
}

}  // namespace lemma::kernels::x86
