// The register-tile walk the int8-activation kernels share: rows of W (columns of y) outer in tiles
// of MaxCols, rows of x inner in tiles of MaxRows, the remainders as smaller tiles; each tile runs
// as tile.template operator()<R, C>(m0, n0). The walk only decides which outputs are computed
// together, never how one is reduced, so it cannot change a bit. Columns outer: a tile's W rows stay
// in L1 while every row of x passes them. Included only by per-ISA sources; `static` templates keep
// each instantiation local to its object file (see horizontal_sum.h).
#pragma once

#include <algorithm>
#include <cstdint>

namespace lemma::kernels::x86 {

// f.template operator()<K>() with K = n, for 1 <= n <= Max.
template <int Max, class F>
static inline void with_count(int64_t n, F&& f) {
  if constexpr (Max >= 1) {
    if (n == Max) {
      f.template operator()<Max>();
    } else {
      with_count<Max - 1>(n, f);
    }
  }
}

template <int MaxRows, int MaxCols, class Tile>
static inline void for_each_tile(int64_t M, int64_t N, Tile&& tile) {
  for (int64_t n0 = 0; n0 < N; n0 += MaxCols) {
    with_count<MaxCols>(std::min<int64_t>(MaxCols, N - n0), [&]<int C>() {
      for (int64_t m0 = 0; m0 < M; m0 += MaxRows) {
        with_count<MaxRows>(std::min<int64_t>(MaxRows, M - m0), [&]<int R>() { tile.template operator()<R, C>(m0, n0); });
      }
    });
  }
}

}  // namespace lemma::kernels::x86
