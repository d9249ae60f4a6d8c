// Cache-block sizes of the blocked matmul kernels (G21), chosen per shape from a small table tuned
// once on the benchmark shapes (bench/matmul_bench.cpp) and fixed thereafter. A block size only
// decides which outputs are computed together, never how one output is reduced, so it may differ
// between M values without breaking batch invariance. Plain declarations (ISA files include this).
#pragma once

#include <cstdint>

namespace lemma::kernels {

// Rows of W per cache block for the bf16 dot-product kernel with M rows of x and K values per row:
// a block stays in L2 while every 4-row panel of x passes over it. A multiple of 6 (the register
// tile's width), at least 6.
int64_t dpbf16_block_rows(int64_t M, int64_t K);

}  // namespace lemma::kernels
