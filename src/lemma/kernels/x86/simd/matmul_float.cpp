// y = x W^T for f32/f16/bf16 weights over the vector layer, once per ISA, f32 accumulation.
// Batch invariance: every y[m, n] is one Vec::kWidth-lane accumulator fed by fmadd over k in steps
// of kWidth (the last partial step zero-padded), then the ISA's fixed horizontal sum, whatever the
// tile (m, n) falls in; tiles only decide which elements are computed together, never how.
// Decode (small M) is bound by reading W: the first pass over a block of W rows prefetches the
// rows of the next tile one cache line per row every 32 k, so the memory system always has the
// next rows in flight (the hardware prefetcher alone restarts at each short row). Prefetches change
// no arithmetic.
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/vec/vec.h"

namespace lemma::kernels::x86 {

namespace {

using F = Vec::F;
constexpr int W = Vec::kWidth;

// Row k.. of a W row in each stored type, widened to f32: `count` values (the rest 0) for the tail.
struct F32Weights {
  static constexpr int kBytes = 4;
  static F load(const void* row, int64_t k) { return Vec::load(static_cast<const float*>(row) + k); }
  static F load_first(const void* row, int64_t k, int64_t count) { return Vec::load_first(static_cast<const float*>(row) + k, count); }
};
struct F16Weights {
  static constexpr int kBytes = 2;
  static F load(const void* row, int64_t k) { return Vec::load_f16(static_cast<const uint16_t*>(row) + k); }
  static F load_first(const void* row, int64_t k, int64_t count) {
    return Vec::f16_to_f32(Vec::load_h_first(static_cast<const uint16_t*>(row) + k, count));
  }
};
struct Bf16Weights {
  static constexpr int kBytes = 2;
  static F load(const void* row, int64_t k) { return Vec::load_bf16(static_cast<const uint16_t*>(row) + k); }
  static F load_first(const void* row, int64_t k, int64_t count) {
    return Vec::bf16_to_f32(Vec::load_h_first(static_cast<const uint16_t*>(row) + k, count));
  }
};

template <class Wt, int MR, int NR, bool kPrefetch>
void tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  F acc[MR][NR];
  const float* x[MR];
  const char* w[NR];
  const char* next[NR];  // row j + NR (the next tile's rows), or row j itself past the end of W
  for (int i = 0; i < MR; ++i) {
    x[i] = a.x + (m0 + i) * a.x_stride;
    for (int j = 0; j < NR; ++j) acc[i][j] = Vec::zero();
  }
  for (int j = 0; j < NR; ++j) {
    w[j] = static_cast<const char*>(a.w) + (n0 + j) * a.w_row_bytes;
    next[j] = n0 + NR + j < a.N ? w[j] + NR * a.w_row_bytes : w[j];
  }
  const auto step = [&](int64_t k) {
    F wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = Wt::load(w[j], k);
    for (int i = 0; i < MR; ++i) {
      const F xv = Vec::load(x[i] + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = Vec::fmadd(xv, wv[j], acc[i][j]);
    }
  };
  int64_t k = 0;
  for (; k + 32 <= a.K; k += 32) {
    if constexpr (kPrefetch) {
      for (int j = 0; j < NR; ++j)
        for (int line = 0; line < 32 * Wt::kBytes; line += 64) _mm_prefetch(next[j] + k * Wt::kBytes + line, _MM_HINT_T0);
    }
    for (int s = 0; s < 32; s += W) step(k + s);
  }
  for (; k + W <= a.K; k += W) step(k);
  if (k < a.K) {
    const int64_t count = a.K - k;
    F wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = Wt::load_first(w[j], k, count);
    for (int i = 0; i < MR; ++i) {
      const F xv = Vec::load_first(x[i] + k, count);
      for (int j = 0; j < NR; ++j) acc[i][j] = Vec::fmadd(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    float* y = a.y + (m0 + i) * a.y_stride + n0;
    for (int j = 0; j < NR; ++j) {
      float sum = Vec::reduce_add(acc[i][j]);
      if (a.bias != nullptr) sum += a.bias[n0 + j];
      y[j] = sum;
    }
  }
}

// Register tile: kMr rows of x by kNr rows of W, kMr * kNr accumulators + kNr weight vectors + one
// x vector in the register file (2 x 4 in AVX2's 16 ymm, 4 x 4 in AVX-512's 32 zmm).
constexpr int kMr = Vec::kRegisters / 8;
constexpr int kNr = 4;
constexpr int64_t kNBlock = 32;  // rows of W kept hot in cache while all of x streams past

using TileFn = void (*)(const MatmulArgs&, int64_t, int64_t);

template <class Wt, bool kPrefetch>
TileFn pick_tile(int64_t mr, int64_t nr) {
  TileFn fn = nullptr;
  with_count<kMr>(mr, [&]<int R>() { with_count<kNr>(nr, [&]<int C>() { fn = &tile<Wt, R, C, kPrefetch>; }); });
  return fn;
}

template <class Wt>
void run(const MatmulArgs& a) {
  for (int64_t nb = 0; nb < a.N; nb += kNBlock) {
    const int64_t n_end = nb + kNBlock < a.N ? nb + kNBlock : a.N;
    for (int64_t m0 = 0; m0 < a.M; m0 += kMr) {
      const int64_t mr = a.M - m0 < kMr ? a.M - m0 : kMr;
      for (int64_t n0 = nb; n0 < n_end; n0 += kNr) {
        const int64_t nr = n_end - n0 < kNr ? n_end - n0 : kNr;
        // Only the first pass over this block of W reads it from memory; later ones hit cache.
        (m0 == 0 ? pick_tile<Wt, true>(mr, nr) : pick_tile<Wt, false>(mr, nr))(a, m0, n0);
      }
    }
  }
}

}  // namespace

void simd::matmul_f32(const MatmulArgs& args) { run<F32Weights>(args); }
void simd::matmul_f16(const MatmulArgs& args) { run<F16Weights>(args); }
void simd::matmul_bf16(const MatmulArgs& args) { run<Bf16Weights>(args); }

}  // namespace lemma::kernels::x86
