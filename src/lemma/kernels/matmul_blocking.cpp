#include "lemma/kernels/matmul_blocking.h"

#include <algorithm>

namespace lemma::kernels {

namespace {
constexpr int64_t kTileRows = 6;  // the register tile's W rows (matmul_dpbf16.cpp)
// Bytes of W one block may hold: half of a 1 MiB L2, the rest for the x panels streaming past.
// bench/matmul_bench.cpp on the qwen05b shapes (K = 896 and 4864, M = 32 and 512, one thread)
// measured 64 KiB to 4 MiB within the machine's noise of each other; 512 KiB was never worse.
constexpr int64_t kBlockBytes = 512 * 1024;
}  // namespace

int64_t dpbf16_block_rows(int64_t M, int64_t K) {
  // One pass over W (M <= 4): blocking cannot help, keep the prefetching pass unbroken.
  if (M <= 4) return kTileRows << 36;
  const int64_t rows = kBlockBytes / std::max<int64_t>(2 * K, 1);
  return std::max(kTileRows, rows / kTileRows * kTileRows);
}

}  // namespace lemma::kernels
