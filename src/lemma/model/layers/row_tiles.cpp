#include "lemma/model/layers/row_tiles.h"

#include <algorithm>

namespace lemma::layers {

RowTiles guided_row_tiles(int64_t rows, int64_t threads, int64_t min_rows, int64_t align) {
  RowTiles tiles;
  // No tile below 1 / (kMaxTiles - 2 threads) of the rows either, so the table always suffices.
  const int64_t slots = std::max(RowTiles::kMaxTiles - 2 * threads, RowTiles::kMaxTiles / 2);
  const int64_t floor_rows = std::max(min_rows, (rows + slots - 1) / slots);
  int64_t at = 0;
  while (at < rows) {
    const int64_t left = rows - at;
    const int64_t share = std::max(floor_rows, (left + 2 * threads - 1) / (2 * threads));
    int64_t size = (share + align - 1) / align * align;
    if (tiles.count == RowTiles::kMaxTiles - 1) size = left;
    tiles.start[static_cast<size_t>(tiles.count++)] = at;
    at += std::min(size, left);
  }
  tiles.start[static_cast<size_t>(tiles.count)] = rows;
  return tiles;
}

}  // namespace lemma::layers
