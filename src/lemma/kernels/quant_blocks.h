// Byte layouts of the GGUF (ggml) block-quantized formats lemma reads. Each struct is one block;
// scales are IEEE f16 bit patterns. Sizes are checked against dtype_info() in dequantize.cpp.
// Plain data plus `static` unpackers of the packed K-quant scales (internal linkage: ISA files
// include this header too); thread-safe.
#pragma once

#include <array>
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

// IQ4_NL: value = d * kIq4Values[q], q 4-bit, nibbles as Q4_0 (byte j: value j low, j + 16 high).
struct BlockIQ4_NL { uint16_t d; uint8_t qs[kQK / 2]; };
// IQ4_XS: 8 sub-blocks of 32, each with a 6-bit scale ls (low 4 bits: nibble s % 2 of
// scales_l[s / 2]; high 2 bits: bits 2 s of scales_h); value = (d * (ls - 32)) * kIq4Values[q], the
// nibbles of sub-block s in qs[16 s .. 16 s + 15] as IQ4_NL's.
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[kQKK / 64]; uint8_t qs[kQKK / 2]; };

// The 16 values an IQ4_NL / IQ4_XS code selects (ggml's kvalues_iq4nl, from the GGUF format).
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// The same + 128 (1..241): the unsigned operand of vpdpbusd, one byte shuffle from a code.
constexpr std::array<uint8_t, 16> kIq4UnsignedCodes = [] {
  std::array<uint8_t, 16> codes{};
  for (int c = 0; c < 16; ++c) codes[static_cast<size_t>(c)] = static_cast<uint8_t>(kIq4Values[c] + 128);
  return codes;
}();

// IQ4_XS sub-block s's scale with its -32 (-32..31), from the block's scales_h and scales_l.
static inline int iq4_xs_scale(uint16_t scales_h, const uint8_t* scales_l, int s) {
  const int low = (scales_l[s / 2] >> (4 * (s % 2))) & 0x0F;
  const int high = (scales_h >> (2 * s)) & 3;
  return (low | (high << 4)) - 32;
}

static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ2_K) == 84 &&
              sizeof(BlockQ3_K) == 110);

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

// Q3_K's packed scale j (0..15) with its -32: the low 4 bits are the low (j < 8) or high nibble of
// byte j % 8, the top 2 bits are bits 2 (j / 4) of byte 8 + j % 4.
static inline int unpack_k3_scale(const uint8_t* packed, int j) {
  const int low = j < 8 ? packed[j] & 0x0F : packed[j - 8] >> 4;
  const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace lemma::kernels
