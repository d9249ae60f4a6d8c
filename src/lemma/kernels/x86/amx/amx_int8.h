// AMX-INT8 kernels for the interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / Q4_1x16 / Q5_1x16 / IQ4_NLx16 / IQ4_XSx16 weights (interleaved_blocks.h)
// over the signed int8 activations (quantize_signed_activations_*), bits equal to the
// matmul_q*_0x16_int8_reference oracles. One kernel template (interleaved_amx_kernel.h) compiled
// twice: on the AMX instructions with AVX-512 for the f32 step (needs cpu_features().amx; registry
// rows `amx_*_int8`: Q8_0x16 from 32 rows of x, the nibble forms from 128, see registry.cpp and
// README.md) and on the plain C++ tile emulator (tile_emulator.h; runs on any x86-64 CPU, for tests). Thread-safe; the staged panel
// lives in MatmulArgs::scratch (the kernel allocates its own for a call without one). Plain declarations (see x86_kernels.h on why no
// inline code lives here).
#pragma once

#include "lemma/kernels/matmul_args.h"
#include "lemma/kernels/matmul_families.h"

namespace lemma::kernels::x86 {

LEMMA_INTERLEAVED_AMX_FORMATS(LEMMA_DECLARE_INT8_AMX)
}  // namespace lemma::kernels::x86
