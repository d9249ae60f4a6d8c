// The K-quant int8-activation tile (q8k_activations.h) both ISAs run, over an ISA's integer dot
// steps `Dot` (its vector layer plus kCodes, load_codes, accumulate and fold; AVX2: 32 codes per
// step, vpmaddubsw then vpmaddwd by the chunk's scales; AVX-512 VNNI: 64 codes per step, vpmaddubsw
// then vpdpwssd) and a weight format `W` (the ISA file's decoder: prepare(block), codes(prep, step),
// scales(prep, step), finish(...), kOffset). Per 256-value block
// each W row is prepared once; per step its unsigned codes are decoded once and every x row meets
// them: vpmaddubsw(u, q_x) gives exact int16 pair sums (2 * 63 * 127 < 32768; Q6_K/Q3_K then take
// off o * x's pair sums), and Dot::accumulate adds them times the int16 scales into int32 lanes; at
// the block's end Dot::fold gives the reference's 8 sums S_l, and W::finish adds the block's f32
// part (kquant_int8_parts.h) to 8 f32 lanes, reduced as reduce8 does. Included only by per-ISA
// sources; `static inline` keeps each copy local to its object file (see horizontal_sum.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/horizontal_sum.h"
#include "lemma/kernels/x86/int8_tiles.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {
namespace {

template <class Dot, class W, int R, int C>
void kquant_tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  using I = typename Dot::I;
  constexpr int kSteps = static_cast<int>(kQ8KBlock) / Dot::kCodes;
  const int64_t blocks = a.K / kQ8KBlock;
  const uint8_t* w[C];
  weight_rows<C>(a, n0, w);
  const int8_t* xc[R];
  const float* xs[R];
  const int16_t* xsum[R];
  for (int r = 0; r < R; ++r) {
    xc[r] = q8k_codes(a.xq, a.K, m0 + r);
    xs[r] = q8k_scales(a.xq, a.K, m0 + r);
    xsum[r] = q8k_sums(a.xq, a.K, m0 + r);
  }
  __m256 acc[R][C];
  for (auto& row : acc)
    for (auto& v : row) v = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    typename W::Prep p[C];
    for (int c = 0; c < C; ++c) p[c] = W::prepare(w[c] + b * W::kBytes);
    I S[R][C];
    for (auto& row : S)
      for (auto& v : row) v = Dot::zero_i32();
    for (int step = 0; step < kSteps; ++step) {
      I u[C], sc[C];
      for (int c = 0; c < C; ++c) {
        u[c] = W::codes(p[c], step);
        sc[c] = W::scales(p[c], step);
      }
      for (int r = 0; r < R; ++r) {
        const I x = Dot::load_codes(xc[r] + b * kQ8KBlock + Dot::kCodes * step);
        // Q6_K/Q3_K: o * (pair sums of x), taken off each (u, x) pair sum: (u - o) q, exact in int16.
        const I offset = W::kOffset != 0 ? Dot::pair_sums_u8i8(Dot::set1_i8(W::kOffset), x) : Dot::zero_i32();
        for (int c = 0; c < C; ++c) {
          I pairs = Dot::pair_sums_u8i8(u[c], x);
          if constexpr (W::kOffset != 0) pairs = Dot::sub_i16(pairs, offset);
          S[r][c] = Dot::accumulate(S[r][c], pairs, sc[c]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xsum[r] + b * 16));
      for (int c = 0; c < C; ++c) acc[r][c] = W::finish(p[c], Dot::fold(S[r][c]), sums, xs[r][b], acc[r][c]);
    }
  }
  float y[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) y[r][c] = reduce8(acc[r][c]);
  store_sums<R, C>(a, m0, n0, y);
}

// The whole product in register tiles of up to kMaxRows rows of x by kMaxCols rows of W.
template <class Dot, int kMaxRows, int kMaxCols, class W>
void kquant_matmul(const MatmulArgs& a) {
  for_each_tile<kMaxRows, kMaxCols>(a.M, a.N, [&]<int R, int C>(int64_t m0, int64_t n0) { kquant_tile<Dot, W, R, C>(a, m0, n0); });
}

}  // namespace
}  // namespace lemma::kernels::x86
