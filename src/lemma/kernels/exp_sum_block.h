// The block of exp_block_sums (vocab_ops.h), alone so the ISA files can include it: no inline code.
#pragma once

#include <cstdint>

namespace lemma::kernels {

// Entries per partial sum of exp_block_sums.
inline constexpr int64_t kExpSumBlock = 1024;

}  // namespace lemma::kernels
