// Byte layouts of the GGUF (ggml) block-quantized formats lemma reads. Each struct is one block;
// scales are IEEE f16 bit patterns. Sizes are checked against dtype_info() in dequantize.cpp.
// Plain data; thread-safe.
#pragma once

#include <cstdint>

namespace lemma::kernels {

constexpr int kQK = 32;    // values per block of the "legacy" formats
constexpr int kQKK = 256;  // values per super-block of the K formats

// value = d * (q - 8), q 4-bit; byte j holds value j (low nibble) and value j + 16 (high nibble).
struct BlockQ4_0 { uint16_t d; uint8_t qs[kQK / 2]; };
// value = d * q + m, q 4-bit, nibbles as Q4_0.
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[kQK / 2]; };
// value = d * (q - 16), q 5-bit: nibbles as Q4_0, bit 4 of value j is bit j of qh (little-endian).
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
// value = d * q + m, q 5-bit as Q5_0.
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
// value = d * q, q int8.
struct BlockQ8_0 { uint16_t d; int8_t qs[kQK]; };
// 8 sub-blocks of 32; sub-block s has a 6-bit scale and 6-bit min packed in `scales`;
// value = d * scale_s * q - dmin * min_s. qs: 64-value groups, low nibbles first then high nibbles.
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qs[kQKK / 2]; };
// As Q4_K plus a 5th bit per value in qh (bit 2g / 2g+1 for the low / high half of group g).
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qh[kQKK / 8]; uint8_t qs[kQKK / 2]; };
// 16 sub-blocks of 16; scales[s]: 4-bit scale (low nibble) and 4-bit min (high nibble);
// value = d * scale * q - dmin * min, q 2-bit: value i of 128-value half h is bits 2*((i%128)/32) of
// qs[32h + i%32].
struct BlockQ2_K { uint8_t scales[kQKK / 16]; uint8_t qs[kQKK / 4]; uint16_t d; uint16_t dmin; };
// 16 sub-blocks of 16 with 6-bit scales packed in 12 bytes (see dequantize.cpp);
// value = d * (scale - 32) * (q - 4 * !high), q 2-bit as Q2_K, `high` bit (i/32) of hmask[i % 32].
struct BlockQ3_K { uint8_t hmask[kQKK / 8]; uint8_t qs[kQKK / 4]; uint8_t scales[12]; uint16_t d; };
// 16 sub-blocks of 16 with int8 scales; value = d * scale * (q - 32), q 6-bit from ql (4) + qh (2).
struct BlockQ6_K { uint8_t ql[kQKK / 2]; uint8_t qh[kQKK / 4]; int8_t scales[kQKK / 16]; uint16_t d; };

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ2_K) == 84 &&
              sizeof(BlockQ3_K) == 110);

}  // namespace lemma::kernels
