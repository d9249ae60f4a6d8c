// The register-tile skeleton the GGUF int8-activation kernels share, whatever their ISA and dot
// instructions (matmul_int8_* over int8_activations.h, matmul_kquant_int8_* over q8k_activations.h):
// R rows of x by C rows of W per tile (walked by for_each_tile, register_tiles.h), each output one
// f32 sum written once with its bias. Included only by per-ISA sources; `static inline` keeps each
// copy local to its object file (see horizontal_sum.h).
#pragma once

#include <cstdint>

#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels::x86 {

// Rows n0 .. n0 + C - 1 of W.
template <int C>
static inline void weight_rows(const MatmulArgs& a, int64_t n0, const uint8_t* (&w)[C]) {
  for (int c = 0; c < C; ++c) w[c] = static_cast<const uint8_t*>(a.w) + (n0 + c) * a.w_row_bytes;
}

// y[m0 + r, n0 + c] = sums[r][c] (+ bias[n0 + c]) for the tile's outputs. The sums come as an array
// the caller reduced: a lambda reading the accumulators instead changes how the compiler keeps them
// in registers, and slowed the AVX2 Q4_K kernel.
template <int R, int C>
static inline void store_sums(const MatmulArgs& a, int64_t m0, int64_t n0, const float (&sums)[R][C]) {
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      const float y = sums[r][c];
      a.y[(m0 + r) * a.y_stride + n0 + c] = a.bias != nullptr ? y + a.bias[n0 + c] : y;
    }
  }
}

}  // namespace lemma::kernels::x86
