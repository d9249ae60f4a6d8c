// Declarations of the bf16 matmul kernels compiled with per-ISA flags (x86/avx2, x86/avx512bf16).
// Only the registries call these; each needs the matching CPU features (see isa.h).
// Headers included by the ISA files must stay free of inline/template code shared with other files
// (an inline function compiled with AVX-512 could be picked by the linker for every caller).
#pragma once

#include <cstdint>

#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels::x86 {

// bf16 weights with x rounded to bf16 and vdpbf16ps (needs CpuFeatures::avx512_bf16): the packer
// writes args.xq (bf16_activations.h) once per call; the kernel reads it, in cache blocks of
// dpbf16_block_rows() rows of W (matmul_blocking.h), or of `block_rows` (any >= 1: tests try them).
void pack_x_bf16_avx512(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
void matmul_bf16_dpbf16_avx512(const MatmulArgs& args);
void matmul_bf16_dpbf16_avx512_blocked(const MatmulArgs& args, int64_t block_rows);
// Interleaved bf16x16 weights (interleaved_blocks.h) x the same packed x; needs avx512_bf16.
void matmul_bf16x16_dpbf16_avx512(const MatmulArgs& args);
// The same bits with AVX2 + FMA (vdpbf16ps spelled out under MXCSR DAZ + FTZ), for CPUs without
// AVX512_BF16.
void matmul_bf16x16_avx2(const MatmulArgs& args);

}  // namespace lemma::kernels::x86
