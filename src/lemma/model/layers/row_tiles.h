// How a linear group's output rows are cut into team tiles (G21): guided sizes, large first and
// shrinking to a minimum, so that threads claiming them in order finish within one small tile of
// each other. Equal tiles (four per thread) left a thread idle for half a large tile at the end of
// every matmul: 5% of a bf16 decode step, 164 us of a 3.6 ms LM head (trace, qwen05b-shape, 2
// threads). The first tiles are long contiguous ranges, which the hardware prefetchers like.
// Pure functions; no allocation.
#pragma once

#include <array>
#include <cstdint>

namespace lemma::layers {

struct RowTiles {
  static constexpr int64_t kMaxTiles = 128;
  std::array<int64_t, kMaxTiles + 1> start{};  // tile t is rows [start[t], start[t + 1])
  int64_t count = 0;
};

// Tiles over `rows` rows for `threads` threads: each takes about 1 / (2 * threads) of what is left,
// rounded up to a multiple of `align`, never fewer than `min_rows` (a multiple of `align`), than
// rows / (kMaxTiles - 2 * threads) (so the table suffices; at least kMaxTiles / 2 slots) or than what
// is left. rows, min_rows >= 0; threads, align >= 1.
RowTiles guided_row_tiles(int64_t rows, int64_t threads, int64_t min_rows, int64_t align);

}  // namespace lemma::layers
