// y = x W^T for f32/f16/bf16 weights with AVX2 + FMA + F16C, f32 accumulation.
// Batch invariance: every y[m, n] is one 8-lane accumulator fed by fmadd over k in steps of 8
// (zero-padded tail), then the same fixed horizontal sum, whatever tile it falls in.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/x86/x86_kernels.h"
#include "lemma/kernels/x86/horizontal_sum.h"

namespace lemma::kernels::x86 {

namespace {

struct F32Weights {
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

template <class W, int MR, int NR>
void tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  __m256 acc[MR][NR];
  const float* x[MR];
  const void* w[NR];
  for (int i = 0; i < MR; ++i) {
    x[i] = a.x + (m0 + i) * a.x_stride;
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  for (int j = 0; j < NR; ++j) w[j] = static_cast<const char*>(a.w) + (n0 + j) * a.w_row_bytes;
  int64_t k = 0;
  for (; k + 8 <= a.K; k += 8) {
    __m256 wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = W::load(w[j], k);
    for (int i = 0; i < MR; ++i) {
      const __m256 xv = _mm256_loadu_ps(x[i] + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
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

template <class W, int MR>
constexpr TileFn pick_nr(int nr) {
  switch (nr) {
    case 1: return &tile<W, MR, 1>;
    case 2: return &tile<W, MR, 2>;
    case 3: return &tile<W, MR, 3>;
    default: return &tile<W, MR, 4>;
  }
}

template <class W>
void run(const MatmulArgs& a) {
  for (int64_t nb = 0; nb < a.N; nb += kNBlock) {
    const int64_t n_end = nb + kNBlock < a.N ? nb + kNBlock : a.N;
    for (int64_t m0 = 0; m0 < a.M; m0 += kMr) {
      const bool full_m = a.M - m0 >= kMr;
      for (int64_t n0 = nb; n0 < n_end; n0 += kNr) {
        const int nr = static_cast<int>(n_end - n0 < kNr ? n_end - n0 : kNr);
        (full_m ? pick_nr<W, kMr>(nr) : pick_nr<W, 1>(nr))(a, m0, n0);
      }
    }
  }
}

}  // namespace

void matmul_f32_avx2(const MatmulArgs& args) { run<F32Weights>(args); }
void matmul_f16_avx2(const MatmulArgs& args) { run<F16Weights>(args); }
void matmul_bf16_avx2(const MatmulArgs& args) { run<Bf16Weights>(args); }

}  // namespace lemma::kernels::x86
