// f32 -> GGUF block formats Q8_0 and Q4_0, rounding exactly as ggml's reference quantizers
// (quantize_row_q8_0_ref / quantize_row_q4_0_ref, which llama-quantize uses without an imatrix),
// so that the blocks equal llama.cpp's bit for bit. Pure functions over caller-owned memory;
// thread-safe.
#pragma once

#include <cstdint>

#include "lemma/tensor/dtype.h"

namespace lemma::quant {

// Q8_0, per block of 32: d = amax / 127 (stored as f16, round to nearest even);
// q = roundf(x / d) (halves away from zero) using the f32 d. `n` is a multiple of 32.
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
// Q4_0, per block of 32: m = the value of largest magnitude (first one on ties), d = m / -8;
// q = min(15, trunc(x / d + 8.5)), value j in the low nibble of byte j, value j + 16 in the high one.
void quantize_row_q4_0(const float* src, void* dst, int64_t n);

// True for the GGUF types lemma can write (Q8_0, Q4_0, IQ4_NL / IQ4_XS by iq4_quantize.h, and f16 /
// bf16 by rounding to nearest even).
bool can_quantize_gguf(DType type);
// Quantizes `n` values (a multiple of the type's block size) into `dst` (dtype_bytes(type, n) bytes).
// Throws Unsupported for types it cannot write, InvalidArgument for a partial block.
void quantize_row_gguf(DType type, const float* src, void* dst, int64_t n);

}  // namespace lemma::quant
