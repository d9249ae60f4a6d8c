// Scalar references for lemma's in-memory integer blocks (lemma_int_blocks.h): decoders (rows to
// f32, the same float expression as quant/weight_format's dequantizer, so values are bit-equal)
// and the W8A8 matmul oracle. Pure functions; no allocation; thread-safe.
#pragma once

#include <cstdint>

#include "lemma/kernels/matmul_args.h"
#include "lemma/kernels/matmul_families.h"

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
// The int8-activation oracles, one per format of matmul_families.h: y = W x args.xq, x quantised by
// the format's quantiser below (or any of its SIMD twins, which write the same bytes).
// Per 32-value block (int8_activations.h): Q8_0/Q4_0/Q5_0.
void quantize_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
LEMMA_INT8_BLOCK_FORMATS(LEMMA_DECLARE_INT8_REFERENCE)
// The interleaved formats over signed activations (quantize_activations_reference row by row into
// each signed row, then make_int8_activations_signed); I8Z32x16 / I4Z32x16 sum (u - z) q_x.
void quantize_signed_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
LEMMA_INTERLEAVED_SIGNED_FORMATS(LEMMA_DECLARE_INT8_REFERENCE)
// Per 256-value Q8_K block with 16-value code sums (q8k_activations.h): the K-quants, in the file's
// layout and interleaved; K a multiple of 256.
void quantize_q8k_activations_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);
LEMMA_INT8_KQUANT_FORMATS(LEMMA_DECLARE_INT8_REFERENCE)
LEMMA_INTERLEAVED_KQUANT_FORMATS(LEMMA_DECLARE_INT8_REFERENCE)

}  // namespace lemma::kernels
