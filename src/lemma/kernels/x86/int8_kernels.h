// Declarations of the x86 int8-activation kernels: W8A8 (int8 weights in kW8A8 blocks, activations quantised per
// row at run time; see lemma_int_blocks.h for the rule). Both give bits equal to
// matmul_w8a8_reference: the products are summed exactly in int32, so the order does not matter and
// a row's result never depends on M. Only registry.cpp calls these. Plain declarations (the ISA
// files include this header; see x86_kernels.h on why no inline code lives here).
#pragma once

#include <cstdint>

#include "lemma/kernels/matmul_args.h"
#include "lemma/kernels/matmul_families.h"

namespace lemma::kernels::x86 {

// AVX2: vpmaddubsw on |x| and sign-applied weights, vpmaddwd to int32.
void matmul_w8a8_avx2(const MatmulArgs& args);
// AVX-512 VNNI: vpdpbusd on the +128 weight bytes, minus 128 * sum(q_x). Needs avx512_vnni.
void matmul_w8a8_avx512vnni(const MatmulArgs& args);

// Every int8-activation format of matmul_families.h, bits equal to its matmul_*_int8_reference oracle.
// AVX2: vpmaddubsw + vpmaddwd to int32, on any AVX2 CPU. AVX-512 VNNI: vpdpbusd (vpdpwssd by the
// K-quants' group scales); these need avx512_vnni.
LEMMA_INT8_BLOCK_FORMATS(LEMMA_DECLARE_INT8_AVX2)
LEMMA_INT8_BLOCK_FORMATS(LEMMA_DECLARE_INT8_VNNI)
LEMMA_INT8_KQUANT_FORMATS(LEMMA_DECLARE_INT8_AVX2)
LEMMA_INT8_KQUANT_FORMATS(LEMMA_DECLARE_INT8_VNNI)
LEMMA_INTERLEAVED_SIGNED_FORMATS(LEMMA_DECLARE_INT8_AVX2)
LEMMA_INTERLEAVED_SIGNED_FORMATS(LEMMA_DECLARE_INT8_VNNI)
LEMMA_INTERLEAVED_KQUANT_FORMATS(LEMMA_DECLARE_INT8_AVX2)
LEMMA_INTERLEAVED_KQUANT_FORMATS(LEMMA_DECLARE_INT8_VNNI)
// Interleaved W8A8x16 over the W8A8 rule's signed activations: matmul_w8a8_reference's bits.
void matmul_w8a8x16_avx2(const MatmulArgs& args);
void matmul_w8a8x16_avx512vnni(const MatmulArgs& args);
}  // namespace lemma::kernels::x86
