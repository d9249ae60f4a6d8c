// Declarations of the flash-attention split kernels, one per ISA (see flash_attention.h). Only
// flash_attention.cpp calls them; each needs the matching CPU features. No inline code here.
#pragma once

#include "lemma/kernels/attention/flash_split_args.h"
#include "lemma/kernels/x86/simd/simd_kernels.h"

namespace lemma::kernels {

void flash_split_reference(const FlashSplitArgs& args);

// The AVX2 / AVX-512 / AVX512_BF16 kernels: x86::avx2::flash_split and its twins (x86/simd/simd_kernels.h).
namespace x86 {
// AMX-BF16 tiles for a bf16 cache with head_dim <= 256 (x86/amx/flash_split_amx_kernel.h): on the
// hardware (needs AMX) and on the tile emulator (needs AVX-512; tests).
void flash_split_amx_bf16(const FlashSplitArgs& args);
void flash_split_amx_bf16_emulated(const FlashSplitArgs& args);
}  // namespace x86

}  // namespace lemma::kernels
