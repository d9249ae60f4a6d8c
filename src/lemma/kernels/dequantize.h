// Reference conversion of stored rows (f32, f16, bf16 and the GGUF block formats) to f32.
// Matches ggml's dequantisation bit for bit (same float expressions, no FMA contraction).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "lemma/kernels/isa.h"
#include "lemma/tensor/dtype.h"

namespace lemma::kernels {

// Converts `n` values starting at `src` (n a multiple of the block size).
using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);

// True for f32, f16, bf16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool can_dequantize(DType type);
// The converter for `type`; nullptr when !can_dequantize(type).
DequantizeFn dequantize_fn(DType type);
// The fastest converter for `type` that runs under `isa`; always bit-identical to
// dequantize_fn(type). nullptr when !can_dequantize(type).
DequantizeFn dequantize_fn(DType type, Isa isa);
// Throws Unsupported for types it cannot convert; n must be a whole number of blocks (asserted).
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace lemma::kernels
