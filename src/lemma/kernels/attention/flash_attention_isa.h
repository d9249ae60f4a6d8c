// Declarations of the flash-attention split kernels, one per ISA (see flash_attention.h). Only
// flash_attention.cpp calls them; each needs the matching CPU features. No inline code here.
#pragma once

#include "lemma/kernels/attention/flash_split_args.h"

namespace lemma::kernels {

void flash_split_reference(const FlashSplitArgs& args);

namespace x86 {
void flash_split_avx2(const FlashSplitArgs& args);    // any head_dim (8-wide, masked tail)
void flash_split_avx512(const FlashSplitArgs& args);  // any head_dim (16-wide, masked tail)
// The same + AVX512_BF16: a bf16 cache's q . k by vdpbf16ps.
void flash_split_avx512_bf16(const FlashSplitArgs& args);
// AMX-BF16 tiles for a bf16 cache with head_dim <= 256 (x86/amx/flash_split_amx_kernel.h): on the
// hardware (needs AMX) and on the tile emulator (needs AVX-512; tests).
void flash_split_amx_bf16(const FlashSplitArgs& args);
void flash_split_amx_bf16_emulated(const FlashSplitArgs& args);
}  // namespace x86

}  // namespace lemma::kernels
