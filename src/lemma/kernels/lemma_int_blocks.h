// Byte layouts of lemma's in-memory integer weight blocks (DType kI8Z32, kI4Z32, kW8A8): what
// quant/runnable_weights.h re-lays lemma int8/int4/W8A8 safetensors into so that the matmul kernels
// read the codes directly. Every block holds 32 values of one row and starts with its f16 scale `d`
// (IEEE bits; packed, no padding), so a row of W is a run of whole blocks and a view of a row range stays valid.
// Plain data; thread-safe.
#pragma once

#include <cstdint>

namespace lemma::kernels {

constexpr int kIntBlock = 32;  // values per block

// Asymmetric int8: value = d * (qs[j] - z), qs and z unsigned.
struct __attribute__((packed)) BlockI8Z32 { uint16_t d; uint8_t z; uint8_t qs[kIntBlock]; };
// Asymmetric int4: value = d * (q - z), q 4-bit; byte j holds value j (low nibble) and value j + 16
// (high nibble), as GGUF Q4_0.
struct __attribute__((packed)) BlockI4Z32 { uint16_t d; uint8_t z; uint8_t qs[kIntBlock / 2]; };
// W8A8 weights: value = d * (qs[j] - 128), qs = q + 128 with q in -127..127 (the +128 lets
// vpdpbusd take the weights as its unsigned operand). `d` is the row's (per-channel) scale and is
// the same in every block of a row: kernels read it from the row's first block. The matmul
// quantises each activation row to int8 (one scale per row) and accumulates exact int32 sums.
struct BlockW8A8 { uint16_t d; uint8_t qs[kIntBlock]; };

static_assert(sizeof(BlockI8Z32) == 35 && sizeof(BlockI4Z32) == 19 && sizeof(BlockW8A8) == 34);

// The W8A8 activation rule shared by every W8A8 kernel (reference and SIMD give equal bits):
// per row of x, amax = max|x|, id = amax > 0 ? 127 / amax : 0, q = clamp(round_half_even(x * id),
// -127, 127) in f32 arithmetic, sx = amax / 127; y = float(sum_k q_x * q_w) * (sx * d) (+ bias).
// The integer sum is exact in int32 for K <= 65536 (kW8A8MaxK); every W8A8 kernel writes NaN for a
// longer K (outside the format: the quantizer and loader never make such weights).
constexpr int64_t kW8A8MaxK = 65536;

}  // namespace lemma::kernels
