// The scalar oracle for f16x16 weights with f32 activations (interleaved_blocks.h): per output one
// f32 accumulator, fma(f32(w_k), x_k, acc) for k in order. The AVX2 and AVX-512 kernels give its
// bits; it is also the scalar ISA's kernel. Pure; no allocation; thread-safe.
#pragma once

#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels {

void matmul_f16x16_reference(const MatmulArgs& args);

}  // namespace lemma::kernels
