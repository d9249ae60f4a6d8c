// x quantised once per matmul call for the K-quant int8-activation kernels (MatmulPrecision::
// kInt8Activations with Q4_K/Q5_K/Q6_K/Q2_K/Q3_K weights: llama.cpp's vec_dot_type Q8_K). The rule, per
// 256-value block of a row of x: amax = max|x| (NaN ignored), id = amax != 0 ? 127 / amax : 0,
// q = clamp(round_half_even(x * id), -127, 127) (f32 arithmetic; a NaN product -> 0), d_x = amax != 0
// ? 1 / id : 0 (f32, not rounded to f16); a block holding a NaN gets d_x = NaN. Per 16 values g the
// exact sum s_g of their codes (the min terms need only these). ggml's quantize_row_q8_K
// divides by the signed value of largest magnitude instead, so its codes and d are ours negated when
// that value is positive: d_x * q is the same float either way (round half to even is symmetric).
//
// Buffer layout (what MatmulArgs::xq points at), for M rows of K values (K a multiple of 256): row by
// row, q8k_row_bytes(K) each (so rows can be written apart, by several threads: int8_activations.h):
//   codes:  q8k_codes_stride(K) bytes, signed int8 (the weights' codes are unsigned, so x is
//           vpmaddubsw's signed operand);
//   scales: then q8k_scales_stride(K) floats (d_x per block, padded with 0);
//   sums:   then q8k_sums_stride(K) int16 (s_g, K / 16 per row, padded with 0).
// All three strides are multiples of 64 bytes (the buffer must be 64-byte aligned).
//
// The dot product every kernel computes (the reference defines the bits; SIMD kernels match them).
// Every K-quant block is read as 16 groups g of 16 values with unsigned codes u_i, an integer scale
// sc_g, an offset o and, for Q4_K/Q5_K/Q2_K, an integer min mn_g (a per-32 scale or min counts for
// both its halves): value = d_w sc_g (u - o) - dmin_w mn_g. Q4_K: 4-bit u, 6-bit sc/mn; Q5_K: 5-bit u;
// Q6_K: 6-bit u, int8 sc, o = 32; Q2_K: 2-bit u, 4-bit sc/mn; Q3_K: 3-bit u, 6-bit sc - 32, o = 4.
// Per output (m, n), 8 f32 lanes start at +0. Per 256-value block, lane l (0..7) takes the values i
// with (i % 32) / 4 == l, as exact int32 sums over the 32-value chunks c:
//   S_l = sum_c sc_{2c + l/4} * sum_{t<4} (u_{32c+4l+t} - o) q_{32c+4l+t},  N_l = mn_{2l} s_{2l} + mn_{2l+1} s_{2l+1};
//   acc_l = fma(f32(d_w) * d_x, float(S_l), acc_l), then with mins acc_l = fma(-(f32(dmin_w) * d_x), float(N_l), acc_l)
// then y = reduce8(acc) (lane i + lane i+4, then i + i+2, then 0 + 1) (+ bias). The offset stays
// inside each lane (moved to the lanes the 16-value sums would put it in, lanes of o times the
// value's size would cancel in f32). No step depends on M or on other rows, so a row's bits never
// depend on the batch.
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
static constexpr int64_t q8k_row_bytes(int64_t K) {
  return q8k_codes_stride(K) + 4 * q8k_scales_stride(K) + 2 * q8k_sums_stride(K);
}
static constexpr size_t q8k_activation_bytes(int64_t M, int64_t K) { return static_cast<size_t>(M * q8k_row_bytes(K)); }

// Views into a Q8_K-style buffer (row m).
static inline const int8_t* q8k_codes(const void* xq, int64_t K, int64_t m) {
  return static_cast<const int8_t*>(xq) + m * q8k_row_bytes(K);
}
static inline const float* q8k_scales(const void* xq, int64_t K, int64_t m) {
  return reinterpret_cast<const float*>(q8k_codes(xq, K, m) + q8k_codes_stride(K));
}
static inline const int16_t* q8k_sums(const void* xq, int64_t K, int64_t m) {
  return reinterpret_cast<const int16_t*>(q8k_scales(xq, K, m) + q8k_scales_stride(K));
}

// Rows m0 .. m0 + R - 1 of Q8_K-style x, for the K-quant kernels.
template <int R>
struct Q8kRows {
  const int8_t* codes[R];
  const float* scales[R];
  const int16_t* sums[R];
  Q8kRows(const void* xq, int64_t K, int64_t m0) {
    for (int r = 0; r < R; ++r) {
      codes[r] = q8k_codes(xq, K, m0 + r);
      scales[r] = q8k_scales(xq, K, m0 + r);
      sums[r] = q8k_sums(xq, K, m0 + r);
    }
  }
};

}  // namespace lemma::kernels
