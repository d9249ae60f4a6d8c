// The scalar oracle for bf16x16 weights with bf16 activations (interleaved_blocks.h): the x packer
// (bf16_activations.h's layout and rounding) and the matmul, each spelled out from the Intel SDM's
// definitions of vcvtne2ps2bf16 and vdpbf16ps. The AVX512_BF16 kernel is tested against it; it is
// also the fallback on every other ISA. Pure functions; no allocation; thread-safe.
#pragma once

#include <cstdint>

#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels {

// x [M, K] to bf16 (round to nearest even, NaN kept quiet, subnormal inputs to +-0), rows
// bf16_x_stride(K) apart and zero-padded; `out` holds bf16_activation_bytes(M, K).
void pack_x_bf16_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
// y = bf16x16 W x args.xq (packed as above); K a multiple of 32.
void matmul_bf16x16_reference(const MatmulArgs& args);
// The same sum in TDPBF16PS's order (even element of each pair first), as the SDM pseudocode and
// the tile emulator define it: the model the AMX-BF16 kernel (x86/amx/) is tested against. Tests
// only; no registry row uses it.
void matmul_bf16x16_tdpbf16ps_reference(const MatmulArgs& args);

}  // namespace lemma::kernels
