// y = x W^T for f32/f16/bf16 weights with AVX2 + FMA + F16C, f32 accumulation.
// Batch invariance: every y[m, n] is one 8-lane accumulator fed by fmadd over k in steps of 8
// (zero-padded tail), then the same fixed horizontal sum, whatever tile it falls in.
// The first pass over a block of W rows prefetches the next tile's rows (see matmul_avx512.cpp).
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/x86/x86_kernels.h"
#include "lemma/kernels/x86/horizontal_sum.h"

namespace lemma::kernels::x86 {

namespace {

struct F32Weights {
  static constexpr int kBytes = 4;
  static __m256 load(const void* row, int64_t k) {
    return _mm256_loadu_ps(static_cast<const float*>(row) + k);
  }
  static __m256 load_tail(const void* row, int64_t k, int64_t count) {
    float buf[8] = {};
    std::memcpy(buf, static_cast<const float*>(row) + k, static_cast<size_t>(count) * 4);
    return _mm256_loadu_ps(buf);
  }
};

struct F16Weights {
  static constexpr int kBytes = 2;
  static __m256 load(const void* row, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + k)));
  }
  static __m256 load_tail(const void* row, int64_t k, int64_t count) {
    uint16_t buf[8] = {};
    std::memcpy(buf, static_cast<const uint16_t*>(row) + k, static_cast<size_t>(count) * 2);
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(buf)));
  }
};

struct Bf16Weights {
  static constexpr int kBytes = 2;
  static __m256 widen(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static __m256 load(const void* row, int64_t k) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + k)));
  }
  static __m256 load_tail(const void* row, int64_t k, int64_t count) {
    uint16_t buf[8] = {};
    std::memcpy(buf, static_cast<const uint16_t*>(row) + k, static_cast<size_t>(count) * 2);
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(buf)));
  }
};

__m256 load_x_tail(const float* x, int64_t k, int64_t count) {
  float buf[8] = {};
  std::memcpy(buf, x + k, static_cast<size_t>(count) * 4);
  return _mm256_loadu_ps(buf);
}

template <class W, int MR, int NR, bool kPrefetch>
void tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  __m256 acc[MR][NR];
  const float* x[MR];
  const char* w[NR];
  const char* next[NR];  // row j + NR (the next tile's rows), or row j itself past the end of W
  for (int i = 0; i < MR; ++i) {
    x[i] = a.x + (m0 + i) * a.x_stride;
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  for (int j = 0; j < NR; ++j) {
    w[j] = static_cast<const char*>(a.w) + (n0 + j) * a.w_row_bytes;
    next[j] = n0 + NR + j < a.N ? w[j] + NR * a.w_row_bytes : w[j];
  }
  const auto step = [&](int64_t k) {
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load(w[j], k);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_loadu_ps(x[i] + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  };
  int64_t k = 0;
  for (; k + 32 <= a.K; k += 32) {
    if constexpr (kPrefetch) {
      for (int j = 0; j < NR; ++j)
        for (int line = 0; line < 32 * W::kBytes; line += 64) _mm_prefetch(next[j] + k * W::kBytes + line, _MM_HINT_T0);
    }
    step(k);
    step(k + 8);
    step(k + 16);
    step(k + 24);
  }
  for (; k + 8 <= a.K; k += 8) step(k);
  if (k < a.K) {
    const int64_t count = a.K - k;
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load_tail(w[j], k, count);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = load_x_tail(x[i], k, count);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    float* y = a.y + (m0 + i) * a.y_stride + n0;
    for (int j = 0; j < NR; ++j) {
      float sum = reduce8(acc[i][j]);
      if (a.bias != nullptr) sum += a.bias[n0 + j];
      y[j] = sum;
    }
  }
}

constexpr int kMr = 2;
constexpr int kNr = 4;
constexpr int64_t kNBlock = 32;

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
TileFn pick_tile(bool full_m, int nr) {
  return full_m ? pick_nr<W, kMr, kPrefetch>(nr) : pick_nr<W, 1, kPrefetch>(nr);
}

template <class W>
void run(const MatmulArgs& a) {
  for (int64_t nb = 0; nb < a.N; nb += kNBlock) {
    const int64_t n_end = nb + kNBlock < a.N ? nb + kNBlock : a.N;
    for (int64_t m0 = 0; m0 < a.M; m0 += kMr) {
      const bool full_m = a.M - m0 >= kMr;
      for (int64_t n0 = nb; n0 < n_end; n0 += kNr) {
        const int nr = static_cast<int>(n_end - n0 < kNr ? n_end - n0 : kNr);
        // Only the first pass over this block of W reads it from memory; later ones hit cache.
        (m0 == 0 ? pick_tile<W, true>(full_m, nr) : pick_tile<W, false>(full_m, nr))(a, m0, n0);
      }
    }
  }
}

}  // namespace

void matmul_f32_avx2(const MatmulArgs& args) { run<F32Weights>(args); }
void matmul_f16_avx2(const MatmulArgs& args) { run<F16Weights>(args); }
void matmul_bf16_avx2(const MatmulArgs& args) { run<Bf16Weights>(args); }

}  // namespace lemma::kernels::x86
