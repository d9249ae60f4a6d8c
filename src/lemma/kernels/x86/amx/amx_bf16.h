// The AMX-BF16 kernel for interleaved bf16x16 weights over bf16 activations (bf16_activations.h):
// TDPBF16PS over 16 x rows x 32 k values x 16 W rows, each output accumulated over all of K in one
// C tile. One kernel template (bf16x16_amx_kernel.h) compiled twice: on the AMX instructions (needs
// cpu_features().amx; registry.cpp's Isa::kAmx row) and on the plain C++ tile emulator (any x86-64
// CPU; for tests). Thread-safe; no allocation. Plain declarations (see x86_kernels.h).
#pragma once

#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels::x86 {

void matmul_bf16x16_amx(const MatmulArgs& args);
void matmul_bf16x16_amx_emulated(const MatmulArgs& args);

}  // namespace lemma::kernels::x86
