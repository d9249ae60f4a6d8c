// Dequantisation checked against blocks built by independent encoders: each test packs chosen
// integer codes and scales following the format description, then expects the decoded formula.
#include "lemma/kernels/dequantize.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/quant_blocks.h"

namespace lemma::kernels {
namespace {

std::vector<float> decode(DType type, const void* block, int n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(type, block, out.data(), n);
  return out;
}

TEST(Dequantize, Q8_0) {
  BlockQ8_0 b{};
  b.d = f32_to_f16(0.25f);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(i * 7 - 128);
  const auto y = decode(DType::kQ8_0, &b, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], static_cast<float>(i * 7 - 128) * 0.25f) << i;
}

// Legacy formats: value i < 16 in the low nibble of byte i, value i >= 16 in the high nibble of
// byte i - 16; the 5th bit of value i is bit i of qh.
template <class Block>
void pack_nibbles(Block& b, const int* q) {
  for (int i = 0; i < 32; ++i) {
    const int nibble = q[i] & 15;
    b.qs[i % 16] = static_cast<uint8_t>(i < 16 ? (b.qs[i % 16] & 0xF0) | nibble : (b.qs[i % 16] & 0x0F) | (nibble << 4));
  }
}
template <class Block>
void pack_high_bits(Block& b, const int* q) {
  uint32_t qh = 0;
  for (int i = 0; i < 32; ++i) qh |= static_cast<uint32_t>((q[i] >> 4) & 1) << i;
  std::memcpy(b.qh, &qh, 4);
}

TEST(Dequantize, LegacyFormats) {
  int q4[32], q5[32];
  for (int i = 0; i < 32; ++i) {
    q4[i] = (i * 5 + 3) % 16;
    q5[i] = (i * 11 + 7) % 32;
  }
  const float d = f16_to_f32(f32_to_f16(0.0371f)), m = f16_to_f32(f32_to_f16(-0.52f));
  BlockQ4_0 b40{};
  b40.d = f32_to_f16(d);
  pack_nibbles(b40, q4);
  BlockQ4_1 b41{};
  b41.d = f32_to_f16(d);
  b41.m = f32_to_f16(m);
  pack_nibbles(b41, q4);
  BlockQ5_0 b50{};
  b50.d = f32_to_f16(d);
  pack_nibbles(b50, q5);
  pack_high_bits(b50, q5);
  BlockQ5_1 b51{};
  b51.d = f32_to_f16(d);
  b51.m = f32_to_f16(m);
  pack_nibbles(b51, q5);
  pack_high_bits(b51, q5);
  const auto y40 = decode(DType::kQ4_0, &b40, 32), y41 = decode(DType::kQ4_1, &b41, 32);
  const auto y50 = decode(DType::kQ5_0, &b50, 32), y51 = decode(DType::kQ5_1, &b51, 32);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(y40[i], static_cast<float>(q4[i] - 8) * d) << i;
    EXPECT_EQ(y41[i], static_cast<float>(q4[i]) * d + m) << i;
    EXPECT_EQ(y50[i], static_cast<float>(q5[i] - 16) * d) << i;
    EXPECT_EQ(y51[i], static_cast<float>(q5[i]) * d + m) << i;
  }
}

// K formats, 6-bit scale/min of sub-block s (32 values): s < 4 in the low 6 bits of bytes s / s+4;
// s >= 4: low 4 bits in byte s+4 (scale low nibble, min high nibble), top 2 bits in the top bits of
// bytes s-4 (scale) and s (min).
void pack_scales_k4(uint8_t* out, const int* scale, const int* min) {
  std::memset(out, 0, 12);
  for (int s = 0; s < 8; ++s) {
    if (s < 4) {
      out[s] |= static_cast<uint8_t>(scale[s]);
      out[s + 4] |= static_cast<uint8_t>(min[s]);
    } else {
      out[s + 4] |= static_cast<uint8_t>((scale[s] & 15) | ((min[s] & 15) << 4));
      out[s - 4] |= static_cast<uint8_t>((scale[s] >> 4) << 6);
      out[s] |= static_cast<uint8_t>((min[s] >> 4) << 6);
    }
  }
}

// Value i of a Q4_K/Q5_K super-block: group g = i / 64 uses bytes qs[32g .. 32g+31]; the first 32
// values take the low nibbles, the next 32 the high ones; Q5_K's 5th bit is bit i/32 of qh[i % 32].
TEST(Dequantize, Q4_KAndQ5_K) {
  std::mt19937 rng(7);
  int scale[8], min[8], q[256];
  for (int s = 0; s < 8; ++s) {
    scale[s] = static_cast<int>(rng() % 64);
    min[s] = static_cast<int>(rng() % 64);
  }
  scale[5] = 63;
  min[6] = 63;
  for (int& v : q) v = static_cast<int>(rng() % 32);
  const float d = f16_to_f32(f32_to_f16(0.0123f)), dmin = f16_to_f32(f32_to_f16(0.0071f));
  BlockQ4_K b4{};
  BlockQ5_K b5{};
  b4.d = b5.d = f32_to_f16(d);
  b4.dmin = b5.dmin = f32_to_f16(dmin);
  pack_scales_k4(b4.scales, scale, min);
  pack_scales_k4(b5.scales, scale, min);
  for (int i = 0; i < 256; ++i) {
    const int byte = (i / 64) * 32 + i % 32;
    const int shift = (i % 64) >= 32 ? 4 : 0;
    b4.qs[byte] |= static_cast<uint8_t>((q[i] & 15) << shift);
    b5.qs[byte] |= static_cast<uint8_t>((q[i] & 15) << shift);
    b5.qh[i % 32] |= static_cast<uint8_t>(((q[i] >> 4) & 1) << (i / 32));
  }
  const auto y4 = decode(DType::kQ4_K, &b4, 256), y5 = decode(DType::kQ5_K, &b5, 256);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32;
    EXPECT_EQ(y4[i], (d * static_cast<float>(scale[s])) * static_cast<float>(q[i] & 15) -
                         dmin * static_cast<float>(min[s])) << i;
    EXPECT_EQ(y5[i], (d * static_cast<float>(scale[s])) * static_cast<float>(q[i]) -
                         dmin * static_cast<float>(min[s])) << i;
  }
}

// Value i of Q6_K: half h = i / 128, r = i % 128, quarter c = r / 32, l = r % 32; low 4 bits in
// ql[64h + l + 32(c & 1)] (low nibble for c < 2), top 2 bits at bit 2c of qh[32h + l]; scale index
// 8h + 2c + l / 16.
TEST(Dequantize, Q6_K) {
  std::mt19937 rng(11);
  int q[256];
  int8_t scales[16];
  for (int& v : q) v = static_cast<int>(rng() % 64);
  for (auto& s : scales) s = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  BlockQ6_K b{};
  const float d = f16_to_f32(f32_to_f16(0.0093f));
  b.d = f32_to_f16(d);
  std::memcpy(b.scales, scales, 16);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, r = i % 128, c = r / 32, l = r % 32;
    b.ql[64 * h + l + 32 * (c & 1)] |= static_cast<uint8_t>((q[i] & 15) << (c >= 2 ? 4 : 0));
    b.qh[32 * h + l] |= static_cast<uint8_t>((q[i] >> 4) << (2 * c));
  }
  const auto y = decode(DType::kQ6_K, &b, 256);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, r = i % 128, c = r / 32, l = r % 32;
    const float want = d * static_cast<float>(scales[8 * h + 2 * c + l / 16]) * static_cast<float>(q[i] - 32);
    EXPECT_EQ(y[i], want) << i;
  }
}

// Q2_K/Q3_K value i: half h = i / 128, field f = (i % 128) / 32, l = i % 32: 2 bits at 2f of
// qs[32h + l]; sub-block (16 values) i / 16; Q3_K's high bit is bit i / 32 of hmask[i % 32].
TEST(Dequantize, Q2_K) {
  std::mt19937 rng(13);
  BlockQ2_K b{};
  int q[256], sc[16], mn[16];
  for (int s = 0; s < 16; ++s) {
    sc[s] = static_cast<int>(rng() % 16);
    mn[s] = static_cast<int>(rng() % 16);
    b.scales[s] = static_cast<uint8_t>(sc[s] | (mn[s] << 4));
  }
  for (int i = 0; i < 256; ++i) {
    q[i] = static_cast<int>(rng() % 4);
    b.qs[32 * (i / 128) + i % 32] |= static_cast<uint8_t>(q[i] << (2 * ((i % 128) / 32)));
  }
  const float d = f16_to_f32(f32_to_f16(0.031f)), dmin = f16_to_f32(f32_to_f16(0.017f));
  b.d = f32_to_f16(d);
  b.dmin = f32_to_f16(dmin);
  const auto y = decode(DType::kQ2_K, &b, 256);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 16;
    EXPECT_EQ(y[i], (d * static_cast<float>(sc[s])) * static_cast<float>(q[i]) - dmin * static_cast<float>(mn[s])) << i;
  }
}

// Q3_K's scales unpacked word-wise, as ggml describes them (a different formulation from the
// byte-wise one in dequantize.cpp): four little-endian words rebuilt from three.
void q3_k_scales_wordwise(const uint8_t* packed, int8_t* out) {
  uint32_t aux[4] = {};
  std::memcpy(aux, packed, 12);
  const uint32_t tmp = aux[2], low = 0x0F0F0F0F, two = 0x03030303;
  aux[2] = ((aux[0] >> 4) & low) | (((tmp >> 4) & two) << 4);
  aux[3] = ((aux[1] >> 4) & low) | (((tmp >> 6) & two) << 4);
  aux[0] = (aux[0] & low) | ((tmp & two) << 4);
  aux[1] = (aux[1] & low) | (((tmp >> 2) & two) << 4);
  std::memcpy(out, aux, 16);
}

TEST(Dequantize, Q3_K) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 20; ++trial) {
    BlockQ3_K b{};
    for (auto& v : b.scales) v = static_cast<uint8_t>(rng());
    int code[256];  // 3-bit: low 2 bits in qs, bit 2 in hmask; value = (code & 3) - (code & 4 ? 0 : 4)
    for (int i = 0; i < 256; ++i) {
      code[i] = static_cast<int>(rng() % 8);
      b.qs[32 * (i / 128) + i % 32] |= static_cast<uint8_t>((code[i] & 3) << (2 * ((i % 128) / 32)));
      b.hmask[i % 32] |= static_cast<uint8_t>(((code[i] >> 2) & 1) << (i / 32));
    }
    const float d = f16_to_f32(f32_to_f16(0.0213f * static_cast<float>(trial + 1)));
    b.d = f32_to_f16(d);
    int8_t scales[16];
    q3_k_scales_wordwise(b.scales, scales);
    const auto y = decode(DType::kQ3_K, &b, 256);
    for (int i = 0; i < 256; ++i) {
      const int value = (code[i] & 3) - ((code[i] & 4) ? 0 : 4);
      ASSERT_EQ(y[i], (d * static_cast<float>(scales[i / 16] - 32)) * static_cast<float>(value)) << i;
    }
  }
}

// IQ4_NL / IQ4_XS: a code q selects one of 16 fixed values (the GGUF format's table, spelled out
// here rather than read from quant_blocks.h); nibbles as the legacy formats. IQ4_XS: 8 sub-blocks
// of 32, sub-block s's 6-bit scale has its low 4 bits in nibble s % 2 of scales_l[s / 2] and its
// high 2 bits at bit 2 s of scales_h; value = (d * (scale - 32)) * table[q].
constexpr int kIq4Table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(Dequantize, Iq4Nl) {
  int q[32];
  for (int i = 0; i < 32; ++i) q[i] = (i * 7 + 2) % 16;
  const float d = f16_to_f32(f32_to_f16(0.0123f));
  BlockIQ4_NL b{};
  b.d = f32_to_f16(d);
  pack_nibbles(b, q);
  const auto y = decode(DType::kIQ4_NL, &b, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], d * static_cast<float>(kIq4Table[q[i]])) << i;
  // Every code once: byte 0x10 holds code 0 (value 0) and code 1 (value 16).
  BlockIQ4_NL one{};
  one.d = f32_to_f16(1.0f);
  for (int j = 0; j < 16; ++j) one.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto z = decode(DType::kIQ4_NL, &one, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(z[j], static_cast<float>(kIq4Table[j])) << j;
    EXPECT_EQ(z[j + 16], static_cast<float>(kIq4Table[15 - j])) << j;
  }
}

TEST(Dequantize, Iq4Xs) {
  const int scale[8] = {0, 63, 32, 31, 1, 45, 17, 60};  // 6-bit, stored with +32
  BlockIQ4_XS b{};
  const float d = f16_to_f32(f32_to_f16(0.0071f));
  b.d = f32_to_f16(d);
  for (int s = 0; s < 8; ++s) {
    b.scales_l[s / 2] = static_cast<uint8_t>(b.scales_l[s / 2] | ((scale[s] & 15) << (4 * (s % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | ((scale[s] >> 4) << (2 * s)));
  }
  int q[256];
  for (int i = 0; i < 256; ++i) q[i] = (i * 5 + i / 32) % 16;
  for (int s = 0; s < 8; ++s)
    for (int i = 0; i < 32; ++i) {
      uint8_t& byte = b.qs[16 * s + i % 16];
      byte = static_cast<uint8_t>(i < 16 ? (byte & 0xF0) | q[32 * s + i] : (byte & 0x0F) | (q[32 * s + i] << 4));
    }
  const auto y = decode(DType::kIQ4_XS, &b, 256);
  for (int i = 0; i < 256; ++i) {
    const float dl = d * static_cast<float>(scale[i / 32] - 32);
    EXPECT_EQ(y[i], dl * static_cast<float>(kIq4Table[q[i]])) << i;
  }
}

TEST(Dequantize, FloatTypesAndMultipleBlocks) {
  const float src[3] = {1.5f, -2.25f, 3.0e-41f};
  const auto y = decode(DType::kF32, src, 3);
  EXPECT_EQ(std::memcmp(y.data(), src, sizeof(src)), 0);
  const uint16_t h[2] = {f32_to_f16(0.5f), f32_to_bf16(0.5f)};
  EXPECT_EQ(decode(DType::kF16, h, 1)[0], 0.5f);
  EXPECT_EQ(decode(DType::kBF16, h + 1, 1)[0], 0.5f);
  BlockQ8_0 two[2]{};
  two[0].d = f32_to_f16(1.0f);
  two[1].d = f32_to_f16(2.0f);
  two[0].qs[31] = 5;
  two[1].qs[0] = 3;
  const auto y2 = decode(DType::kQ8_0, two, 64);
  EXPECT_EQ(y2[31], 5.0f);
  EXPECT_EQ(y2[32], 6.0f);
}

// Random blocks whose f16 scale fields are any non-NaN pattern (zero, subnormal, huge, infinite).
std::vector<uint8_t> random_blocks(DType type, int blocks, std::mt19937& rng) {
  const DTypeInfo& info = dtype_info(type);
  std::vector<uint8_t> bytes(info.block_bytes * static_cast<size_t>(blocks));
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  for (int b = 0; b < blocks; ++b) {
    uint8_t* block = bytes.data() + b * info.block_bytes;
    // f16 fields: at the start, or (Q6_K, Q3_K: d; Q2_K: d, dmin) at the end.
    const bool at_end = type == DType::kQ6_K || type == DType::kQ3_K || type == DType::kQ2_K;
    const int scale_fields = (type == DType::kQ4_K || type == DType::kQ5_K || type == DType::kQ4_1 ||
                              type == DType::kQ5_1 || type == DType::kQ2_K) ? 2 : 1;
    for (int f = 0; f < scale_fields; ++f) {
      uint8_t* field = at_end ? block + info.block_bytes - 2 * scale_fields + 2 * f : block + 2 * f;
      uint16_t h = static_cast<uint16_t>(rng());
      if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) h &= 0xFC00;  // NaN -> infinity
      if (b % 5 == 0) h = static_cast<uint16_t>(h & 0x83FF);        // subnormal
      std::memcpy(field, &h, 2);
    }
  }
  return bytes;
}

TEST(Dequantize, EveryIsaDecoderMatchesReferenceBits) {
  std::mt19937 rng(3);
  for (DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ2_K,
                     DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS}) {
    const int blocks = 9;
    const auto bytes = random_blocks(type, blocks, rng);
    const int64_t n = blocks * static_cast<int64_t>(dtype_info(type).block_elements);
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    dequantize_fn(type)(bytes.data(), want.data(), n);
    for (Isa isa : available_isas()) {
      std::fill(got.begin(), got.end(), 0.0f);
      dequantize_fn(type, isa)(bytes.data(), got.data(), n);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << dtype_name(type) << " on " << isa_name(isa);
    }
  }
}

TEST(Dequantize, UnsupportedTypesThrow) {
  float out[256];
  uint8_t bytes[512] = {};
  EXPECT_FALSE(can_dequantize(DType::kI8));
  EXPECT_FALSE(can_dequantize(DType::kQ8_K));
  EXPECT_FALSE(can_dequantize(DType::kQ8_1));
  EXPECT_TRUE(can_dequantize(DType::kQ5_1));
  EXPECT_TRUE(can_dequantize(DType::kQ2_K));
  EXPECT_THROW(dequantize_row(DType::kQ8_K, bytes, out, 256), Unsupported);
}

}  // namespace
}  // namespace lemma::kernels
