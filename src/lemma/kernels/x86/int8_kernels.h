// Declarations of the x86 int8-activation kernels: W8A8 (int8 weights in kW8A8 blocks, activations quantised per
// row at run time; see lemma_int_blocks.h for the rule). Both give bits equal to
// matmul_w8a8_reference: the products are summed exactly in int32, so the order does not matter and
// a row's result never depends on M. Only registry.cpp calls these. Plain declarations (the ISA
// files include this header; see x86_kernels.h on why no inline code lives here).
#pragma once

#include <cstdint>

#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels::x86 {

// AVX2: vpmaddubsw on |x| and sign-applied weights, vpmaddwd to int32.
void matmul_w8a8_avx2(const MatmulArgs& args);
// AVX-512 VNNI: vpdpbusd on the +128 weight bytes, minus 128 * sum(q_x). Needs avx512_vnni.
void matmul_w8a8_avx512vnni(const MatmulArgs& args);

// Int8 activations (int8_activations.h; quantised by x86/simd/quantize_activations.cpp): the GGUF
// Q8_0/Q4_0/Q5_0 kernels over args.xq, bits equal to the matmul_*_int8_reference oracles.
// AVX2: vpmaddubsw on |q_w| and q_x with q_w's sign, vpmaddwd to int32.
void matmul_q8_0_int8_avx2(const MatmulArgs& args);
void matmul_q4_0_int8_avx2(const MatmulArgs& args);
void matmul_q5_0_int8_avx2(const MatmulArgs& args);
// AVX-512 VNNI: vpdpbusd on the +128 activation codes and signed weights. Need avx512_vnni.
void matmul_q8_0_int8_avx512vnni(const MatmulArgs& args);
void matmul_q4_0_int8_avx512vnni(const MatmulArgs& args);
void matmul_q5_0_int8_avx512vnni(const MatmulArgs& args);

// Interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / IQ4_NLx16 / IQ4_XSx16 (interleaved_blocks.h) over signed
// activations: bits equal to the matmul_q*_0x16_int8_reference oracles. The avx512vnni kernels need
// avx512_vnni; the avx2 ones (vpmaddubsw + vpmaddwd) run on any AVX2 CPU.
void matmul_q8_0x16_int8_avx2(const MatmulArgs& args);
void matmul_q4_0x16_int8_avx2(const MatmulArgs& args);
void matmul_q5_0x16_int8_avx2(const MatmulArgs& args);
void matmul_iq4_nlx16_int8_avx2(const MatmulArgs& args);
void matmul_iq4_xsx16_int8_avx2(const MatmulArgs& args);
void matmul_q4_1x16_int8_avx2(const MatmulArgs& args);
void matmul_q5_1x16_int8_avx2(const MatmulArgs& args);
void matmul_q8_0x16_int8_avx512vnni(const MatmulArgs& args);
void matmul_q4_0x16_int8_avx512vnni(const MatmulArgs& args);
void matmul_q5_0x16_int8_avx512vnni(const MatmulArgs& args);
void matmul_iq4_nlx16_int8_avx512vnni(const MatmulArgs& args);
void matmul_iq4_xsx16_int8_avx512vnni(const MatmulArgs& args);
void matmul_q4_1x16_int8_avx512vnni(const MatmulArgs& args);
void matmul_q5_1x16_int8_avx512vnni(const MatmulArgs& args);
// Interleaved I8Z32x16 / I4Z32x16 (lemma int8 / int4 with zero points), the same bits as
// matmul_i*z32x16_int8_reference.
void matmul_i8z32x16_int8_avx2(const MatmulArgs& args);
void matmul_i4z32x16_int8_avx2(const MatmulArgs& args);
void matmul_i8z32x16_int8_avx512vnni(const MatmulArgs& args);
void matmul_i4z32x16_int8_avx512vnni(const MatmulArgs& args);
// Interleaved W8A8x16 over the W8A8 rule's signed activations: matmul_w8a8_reference's bits. The
// VNNI kernel needs avx512_vnni; the AVX2 one (vpmaddubsw + vpmaddwd) runs on any AVX2 CPU, and
// Model interleaves W8A8 from AVX2 up.
void matmul_w8a8x16_avx512vnni(const MatmulArgs& args);
void matmul_w8a8x16_avx2(const MatmulArgs& args);
// Interleaved Q2_Kx16 .. Q6_Kx16 with AVX2 (vpmaddubsw + vpmaddwd), the same bits.
void matmul_q2_kx16_int8_avx2(const MatmulArgs& args);
void matmul_q3_kx16_int8_avx2(const MatmulArgs& args);
void matmul_q4_kx16_int8_avx2(const MatmulArgs& args);
void matmul_q5_kx16_int8_avx2(const MatmulArgs& args);
void matmul_q6_kx16_int8_avx2(const MatmulArgs& args);
// Interleaved Q4_Kx16 over Q8_K-style activations (q8k_activations.h). Needs avx512_vnni.
void matmul_q4_kx16_int8_avx512vnni(const MatmulArgs& args);
// Interleaved Q2_Kx16 / Q3_Kx16 over Q8_K-style activations. Need avx512_vnni.
void matmul_q2_kx16_int8_avx512vnni(const MatmulArgs& args);
void matmul_q3_kx16_int8_avx512vnni(const MatmulArgs& args);
// Interleaved Q5_Kx16 over Q8_K-style activations. Needs avx512_vnni.
void matmul_q5_kx16_int8_avx512vnni(const MatmulArgs& args);
// Interleaved Q6_Kx16 over Q8_K-style activations. Needs avx512_vnni.
void matmul_q6_kx16_int8_avx512vnni(const MatmulArgs& args);

// K-quant int8 activations (q8k_activations.h): the Q4_K/Q5_K/Q6_K/Q2_K/Q3_K kernels, bits equal to
// the matmul_*_k_int8_reference oracles.
// AVX2: vpmaddubsw on the unsigned weight codes and signed x, vpmaddwd by the group scales.
void matmul_q4_k_int8_avx2(const MatmulArgs& args);
void matmul_q5_k_int8_avx2(const MatmulArgs& args);
void matmul_q6_k_int8_avx2(const MatmulArgs& args);
void matmul_q2_k_int8_avx2(const MatmulArgs& args);
void matmul_q3_k_int8_avx2(const MatmulArgs& args);
// AVX-512 VNNI: vpmaddubsw, then vpdpwssd by the group scales, 64 values per instruction.
void matmul_q4_k_int8_avx512vnni(const MatmulArgs& args);
void matmul_q5_k_int8_avx512vnni(const MatmulArgs& args);
void matmul_q6_k_int8_avx512vnni(const MatmulArgs& args);
void matmul_q2_k_int8_avx512vnni(const MatmulArgs& args);
void matmul_q3_k_int8_avx512vnni(const MatmulArgs& args);

}  // namespace lemma::kernels::x86
