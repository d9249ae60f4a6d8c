// Scalar references for lemma's in-memory integer blocks (lemma_int_blocks.h): decoders (rows to
// f32, the same float expression as quant/weight_format's dequantizer, so values are bit-equal)
// and the W8A8 matmul oracle. Pure functions; no allocation; thread-safe.
#pragma once

#include <cstdint>

#include "lemma/kernels/matmul_args.h"

namespace lemma::kernels {

// n values (whole blocks) from src to dst.
void decode_i8z32_reference(const void* src, float* dst, int64_t n);
void decode_i4z32_reference(const void* src, float* dst, int64_t n);
void decode_w8a8_reference(const void* src, float* dst, int64_t n);

// y = NaN everywhere: what the int8-activation kernels write when K > kW8A8MaxK (outside the formats).
// Baseline code, also called from the ISA files.
void write_nan_outputs(const MatmulArgs& args);

// y = W8A8 product (lemma_int_blocks.h's activation rule); K a multiple of 32, K <= kW8A8MaxK.
void matmul_w8a8_reference(const MatmulArgs& args);
// W8A8x16 (interleaved_blocks.h): x quantised by the W8A8 rule into the signed int8 layout (every
// block's scale entry = the row's s_x), and y = W x args.xq, bit for bit matmul_w8a8_reference's.
void quantize_w8a8_signed_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
void matmul_w8a8x16_reference(const MatmulArgs& args);
// The int8-activation oracles (int8_activations.h): the quantiser, and y = Q8_0/Q4_0/Q5_0 weights x
// args.xq (x quantised by any of the quantisers); K a multiple of 32.
void quantize_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
void matmul_q8_0_int8_reference(const MatmulArgs& args);
void matmul_q4_0_int8_reference(const MatmulArgs& args);
void matmul_q5_0_int8_reference(const MatmulArgs& args);
// The interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 oracles (interleaved_blocks.h): the signed-activation quantiser
// (quantize_activations_reference row by row into each signed row, then
// make_int8_activations_signed), and y = W x args.xq.
void quantize_signed_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
void matmul_q8_0x16_int8_reference(const MatmulArgs& args);
void matmul_q4_0x16_int8_reference(const MatmulArgs& args);
void matmul_q5_0x16_int8_reference(const MatmulArgs& args);
void matmul_iq4_nlx16_int8_reference(const MatmulArgs& args);
void matmul_iq4_xsx16_int8_reference(const MatmulArgs& args);
void matmul_q4_1x16_int8_reference(const MatmulArgs& args);
void matmul_q5_1x16_int8_reference(const MatmulArgs& args);
// The same for lemma's int8 / int4 with zero points (I8Z32x16 / I4Z32x16): S_b sums (u - z) q_x.
void matmul_i8z32x16_int8_reference(const MatmulArgs& args);
void matmul_i4z32x16_int8_reference(const MatmulArgs& args);
// Q4_Kx16 reads x quantised by quantize_q8k_activations_reference (or its SIMD twins).
void matmul_q4_kx16_int8_reference(const MatmulArgs& args);
void matmul_q2_kx16_int8_reference(const MatmulArgs& args);  // Q8_K-style x as well
void matmul_q3_kx16_int8_reference(const MatmulArgs& args);  // Q8_K-style x as well
void matmul_q5_kx16_int8_reference(const MatmulArgs& args);  // Q8_K-style x as well
void matmul_q6_kx16_int8_reference(const MatmulArgs& args);  // Q8_K-style x as well
// The K-quant int8-activation oracles (q8k_activations.h): the Q8_K-style quantiser, and y = Q4_K/
// Q5_K/Q6_K/Q2_K/Q3_K weights x args.xq; K a multiple of 256.
void quantize_q8k_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
void matmul_q4_k_int8_reference(const MatmulArgs& args);
void matmul_q5_k_int8_reference(const MatmulArgs& args);
void matmul_q6_k_int8_reference(const MatmulArgs& args);
void matmul_q2_k_int8_reference(const MatmulArgs& args);
void matmul_q3_k_int8_reference(const MatmulArgs& args);

}  // namespace lemma::kernels
