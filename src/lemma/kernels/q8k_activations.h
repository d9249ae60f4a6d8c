// x quantised once per matmul call for the K-quant int8-activation kernels (MatmulPrecision::
// kInt8Activations with Q4_K/Q5_K/Q6_K weights: llama.cpp's vec_dot_type Q8_K). The rule, per
// 256-value block of a row of x: amax = max|x| (NaN ignored), id = amax != 0 ? 127 / amax : 0,
// q = clamp(round_half_even(x * id), -127, 127) (f32 arithmetic; a NaN product -> 0), d_x = amax != 0
// ? 1 / id : 0 (f32, not rounded to f16); a block holding a NaN gets d_x = NaN. Per 16 values g the
// exact sum s_g of their codes (Q4_K/Q5_K's min terms need only these). ggml's quantize_row_q8_K
// divides by the signed value of largest magnitude instead, so its codes and d are ours negated when
// that value is positive: d_x * q is the same float either way (round half to even is symmetric).
//
// Buffer layout (what MatmulArgs::xq points at), for M rows of K values (K a multiple of 256):
//   codes:  M rows of q8k_codes_stride(K) bytes, signed int8 (the weights' codes are unsigned, so
//           x is vpmaddubsw's signed operand);
//   scales: then M rows of q8k_scales_stride(K) floats (d_x per block, padded with 0);
//   sums:   then M rows of q8k_sums_stride(K) int16 (s_g, K / 16 per row, padded with 0).
// All three strides are multiples of 64 bytes (the buffer must be 64-byte aligned).
//
// The dot product every kernel computes (the reference defines the bits; SIMD kernels match them).
// Per output (m, n), 8 f32 lanes start at +0. Per 256-value block, with the weight's unsigned codes
// u_i (Q4_K 4-bit, Q5_K 5-bit, Q6_K 6-bit), lane l (0..7) collects the values i with (i % 32) / 4 == l
// as exact int32 sums:
//   Q4_K, Q5_K (8 groups of 32, 6-bit scale sc_j and min mn_j):
//     S_l = sum_j sc_j * sum_{t<4} u_{32j+4l+t} q_{32j+4l+t},   N_l = mn_l * (s_{2l} + s_{2l+1});
//     acc_l = fma(f32(d_w) * d_x, float(S_l), acc_l); acc_l = fma(-(f32(dmin_w) * d_x), float(N_l), acc_l)
//   Q6_K (16 groups of 16, int8 scale sc_g; value = d (u - 32) sc_g):
//     S_l = sum_c sc_{2c + l/4} * sum_{t<4} (u_{32c+4l+t} - 32) q_{32c+4l+t};  acc_l = fma(f32(d_w) * d_x, float(S_l), acc_l)
//     (the -32 stays inside each lane: moved to another lane, as the 16-value sums would put it,
//     lanes of 32 times the value's size would cancel in f32)
// then y = reduce8(acc) (lane i + lane i+4, then i + i+2, then 0 + 1) (+ bias). No step depends on M
// or on other rows, so a row's bits never depend on the batch.
// Plain declarations and `static` helpers (internal linkage; see int8_activations.h on why).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lemma::kernels {

constexpr int64_t kQ8KBlock = 256;
constexpr int64_t kQ8KGroup = 16;  // values per code sum s_g

static constexpr int64_t q8k_codes_stride(int64_t K) { return (K + 63) / 64 * 64; }
static constexpr int64_t q8k_scales_stride(int64_t K) { return (K / kQ8KBlock + 15) / 16 * 16; }
static constexpr int64_t q8k_sums_stride(int64_t K) { return (K / kQ8KGroup + 31) / 32 * 32; }
static constexpr size_t q8k_activation_bytes(int64_t M, int64_t K) {
  return static_cast<size_t>(M * (q8k_codes_stride(K) + 4 * q8k_scales_stride(K) + 2 * q8k_sums_stride(K)));
}

// Views into a Q8_K-style buffer.
static inline const int8_t* q8k_codes(const void* xq, int64_t K, int64_t m) {
  return static_cast<const int8_t*>(xq) + m * q8k_codes_stride(K);
}
static inline const float* q8k_scales(const void* xq, int64_t M, int64_t K, int64_t m) {
  return reinterpret_cast<const float*>(static_cast<const uint8_t*>(xq) + M * q8k_codes_stride(K)) +
         m * q8k_scales_stride(K);
}
static inline const int16_t* q8k_sums(const void* xq, int64_t M, int64_t K, int64_t m) {
  return reinterpret_cast<const int16_t*>(static_cast<const uint8_t*>(xq) + M * (q8k_codes_stride(K) + 4 * q8k_scales_stride(K))) +
         m * q8k_sums_stride(K);
}

// Q4_K/Q5_K's packed 6-bit scales and mins (12 bytes) -> sc[0..7], mn[0..7] as bytes (ggml's
// layout: bytes 0-3 scales 0-3, 4-7 mins 0-3, 8-11 low nibbles of scale/min 4-7 whose top 2 bits
// sit in bits 6-7 of bytes 0-3 / 4-7).
static inline void unpack_k4_scales(const uint8_t* packed, uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = packed[j] & 63;
    mn[j] = packed[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((packed[j + 8] & 0x0F) | ((packed[j] >> 6) << 4));
    mn[j + 4] = static_cast<uint8_t>((packed[j + 8] >> 4) | ((packed[j + 4] >> 6) << 4));
  }
}

}  // namespace lemma::kernels
