// x quantised once per matmul call for the int8-activation kernels (MatmulPrecision::kInt8Activations
// with Q8_0/Q4_0/Q5_0 weights: llama.cpp's vec_dot_type Q8_0). The rule, per 32-value block of a row
// of x: amax = max|x|, d = amax / 127, id = amax != 0 ? 127 / amax : 0 (llama.cpp's x86 quantize_row_q8_0), q = clamp(round_half_even(x * id),
// -127, 127) (f32 arithmetic), d_x = f32(f16(d)). Spelled out for every input: amax ignores NaN;
// v = x * id, NaN -> 0, clamped to [-127, 127] in f32, then rounded half to even; a block holding a
// NaN gets d_x = NaN (so the outputs that read it are NaN, as in f32).
//
// Buffer layout (what MatmulArgs::xq points at), for M rows of K values (K a multiple of 32): row
// by row, each row int8_row_bytes(K) long (so rows can be written apart, by several threads, right
// after x's row is made: layers::write_linear_group_input):
//   codes:  int8_codes_stride(K) bytes, code + 128 as uint8 (so vpdpbusd can take x as its unsigned
//           operand), padded after K with 128 (q = 0);
//   scales: then int8_scales_stride(K) floats (d_x per block, padded with 0).
// Both strides are multiples of 64 bytes (the buffer must be 64-byte aligned).
//
// The dot product every kernel computes (the reference defines the bits; SIMD kernels match them):
// per output (m, n), 16 f32 lanes start at +0; block b adds to lanes 8*(b % 2) + j (j = 0..7):
// acc = fma(f32(d_w) * d_x, float(S_j), acc), S_j the exact int32 sum of q_x * q_w over values
// 4j..4j+3 of the block (q_w: the weight's signed code, Q4_0 nibble - 8, Q5_0 5-bit - 16); then
// y = reduce16(acc) (lane i + lane i+8, then i + i+4, i + i+2, 0 + 1) (+ bias). No step depends on M
// or on other rows, so a row's bits never depend on the batch.
// Plain declarations and `static` helpers (internal linkage: the ISA files include this header, and
// no weak copy compiled with AVX flags may reach baseline callers).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lemma::kernels {

constexpr int64_t kInt8ActivationBlock = 32;

static constexpr int64_t int8_codes_stride(int64_t K) { return (K + 63) / 64 * 64; }
static constexpr int64_t int8_scales_stride(int64_t K) { return (K / kInt8ActivationBlock + 15) / 16 * 16; }
static constexpr int64_t int8_row_bytes(int64_t K) { return int8_codes_stride(K) + 4 * int8_scales_stride(K); }
static constexpr size_t int8_activation_bytes(int64_t M, int64_t K) { return static_cast<size_t>(M * int8_row_bytes(K)); }

// Views into a quantised-x buffer (row m).
static inline const uint8_t* int8_codes(const void* xq, int64_t K, int64_t m) {
  return static_cast<const uint8_t*>(xq) + m * int8_row_bytes(K);
}
static inline const float* int8_scales(const void* xq, int64_t K, int64_t m) {
  return reinterpret_cast<const float*>(int8_codes(xq, K, m) + int8_codes_stride(K));
}

// Writes the buffer for x[M, K] (rows x_stride floats apart) into out (int8_activation_bytes(M, K),
// 64-byte aligned). The reference, AVX2 and AVX-512 versions write the same bytes.
using QuantizeActivationsFn = void (*)(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out);

}  // namespace lemma::kernels
