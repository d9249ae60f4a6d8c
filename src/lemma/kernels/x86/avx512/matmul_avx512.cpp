// y = x W^T for f32/f16/bf16 weights with AVX-512 (F/BW/VL), f32 accumulation.
// Batch invariance: every y[m, n] is one 16-lane accumulator fed by fmadd over k in steps of 16
// (masked tail), then the same fixed horizontal sum, whatever the tile (m, n) falls in; tiles
// only decide which elements are computed together, never how.
// Decode (small M) is bound by reading W: the first pass over a block of W rows prefetches the
// rows of the next tile one cache line per row every 32 k, so the memory system always has the
// next rows in flight (the hardware prefetcher alone restarts at each short row and reaches about
// half the bandwidth). Prefetches change no arithmetic.
#include <immintrin.h>

#include "lemma/kernels/x86/x86_kernels.h"
#include "lemma/kernels/x86/horizontal_sum.h"

namespace lemma::kernels::x86 {

namespace {

struct F32Weights {
  static constexpr int kBytes = 4;
  static __m512 load(const void* row, int64_t k) {
    return _mm512_loadu_ps(static_cast<const float*>(row) + k);
  }
  static __m512 load_tail(const void* row, int64_t k, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(row) + k);
  }
};

struct F16Weights {
  static constexpr int kBytes = 2;
  static __m512 load(const void* row, int64_t k) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(row) + k)));
  }
  static __m512 load_tail(const void* row, int64_t k, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(row) + k));
  }
};

struct Bf16Weights {
  static constexpr int kBytes = 2;
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 load(const void* row, int64_t k) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(row) + k)));
  }
  static __m512 load_tail(const void* row, int64_t k, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(row) + k));
  }
};

template <class W, int MR, int NR, bool kPrefetch>
void tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  __m512 acc[MR][NR];
  const float* x[MR];
  const char* w[NR];
  const char* next[NR];  // row j + NR (the next tile's rows), or row j itself past the end of W
  for (int i = 0; i < MR; ++i) {
    x[i] = a.x + (m0 + i) * a.x_stride;
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  for (int j = 0; j < NR; ++j) {
    w[j] = static_cast<const char*>(a.w) + (n0 + j) * a.w_row_bytes;
    next[j] = n0 + NR + j < a.N ? w[j] + NR * a.w_row_bytes : w[j];
  }
  const auto step = [&](int64_t k) {
    __m512 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load(w[j], k);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_loadu_ps(x[i] + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  };
  int64_t k = 0;
  for (; k + 32 <= a.K; k += 32) {
    if constexpr (kPrefetch) {
      for (int j = 0; j < NR; ++j)
        for (int line = 0; line < 32 * W::kBytes; line += 64) _mm_prefetch(next[j] + k * W::kBytes + line, _MM_HINT_T0);
    }
    step(k);
    step(k + 16);
  }
  if (k + 16 <= a.K) {
    step(k);
    k += 16;
  }
  if (k < a.K) {
    const __mmask16 m = static_cast<__mmask16>((1u << (a.K - k)) - 1u);
    __m512 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load_tail(w[j], k, m);
    for (int i = 0; i < MR; ++i) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, x[i] + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
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
constexpr int64_t kNBlock = 32;  // rows of W kept hot in cache while all of x streams past

using TileFn = void (*)(const MatmulArgs&, int64_t, int64_t);

template <class W, int MR, bool kPrefetch>
constexpr TileFn pick_nr(int nr) {
  switch (nr) {
    case 1: return &tile<W, MR, 1, kPrefetch>;
    case 2: return &tile<W, MR, 2, kPrefetch>;
    case 3: return &tile<W, MR, 3, kPrefetch>;
    default: return &tile<W, MR, 4, kPrefetch>;
  }
}

template <class W, bool kPrefetch>
TileFn pick_tile(int mr, int nr) {
  switch (mr) {
    case 1: return pick_nr<W, 1, kPrefetch>(nr);
    case 2: return pick_nr<W, 2, kPrefetch>(nr);
    case 3: return pick_nr<W, 3, kPrefetch>(nr);
    default: return pick_nr<W, 4, kPrefetch>(nr);
  }
}

template <class W>
void run(const MatmulArgs& a) {
  for (int64_t nb = 0; nb < a.N; nb += kNBlock) {
    const int64_t n_end = nb + kNBlock < a.N ? nb + kNBlock : a.N;
    for (int64_t m0 = 0; m0 < a.M; m0 += kMr) {
      const int mr = static_cast<int>(a.M - m0 < kMr ? a.M - m0 : kMr);
      for (int64_t n0 = nb; n0 < n_end; n0 += kNr) {
        const int nr = static_cast<int>(n_end - n0 < kNr ? n_end - n0 : kNr);
        // Only the first pass over this block of W reads it from memory; later ones hit cache.
        (m0 == 0 ? pick_tile<W, true>(mr, nr) : pick_tile<W, false>(mr, nr))(a, m0, n0);
      }
    }
  }
}

}  // namespace

void matmul_f32_avx512(const MatmulArgs& args) { run<F32Weights>(args); }
void matmul_f16_avx512(const MatmulArgs& args) { run<F16Weights>(args); }
void matmul_bf16_avx512(const MatmulArgs& args) { run<Bf16Weights>(args); }

}  // namespace lemma::kernels::x86
