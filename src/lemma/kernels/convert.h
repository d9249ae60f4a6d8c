// Row conversions between f32 and f16/bf16, vectorised per ISA (scalar, AVX2/F16C, AVX-512).
// Every ISA gives bit-identical results to the scalar functions in float_bits.h (NaNs: still NaN).
// Pure functions over caller-owned memory; no allocation; thread-safe.
#pragma once

#include <cstdint>

#include "lemma/kernels/isa.h"

namespace lemma::kernels {

// `isa` must be one of available_isas(); the overloads without it use detected_isa().
void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n, Isa isa);
void convert_f32_to_f16(const float* src, uint16_t* dst, int64_t n, Isa isa);
void convert_bf16_to_f32(const uint16_t* src, float* dst, int64_t n, Isa isa);
void convert_f32_to_bf16(const float* src, uint16_t* dst, int64_t n, Isa isa);

void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n);
void convert_f32_to_f16(const float* src, uint16_t* dst, int64_t n);
void convert_bf16_to_f32(const uint16_t* src, float* dst, int64_t n);
void convert_f32_to_bf16(const float* src, uint16_t* dst, int64_t n);

}  // namespace lemma::kernels
