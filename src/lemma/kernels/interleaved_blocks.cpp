#include "lemma/kernels/interleaved_blocks.h"

#include <cstring>

#include "lemma/base/error.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/matrix_format.h"

namespace lemma::kernels {

namespace {

constexpr int64_t kBlock = 32;
constexpr int64_t kScaleBytes = 2 * kInterleaveRows;

int64_t block_bytes(DType plain) { return static_cast<int64_t>(dtype_info(plain).block_bytes); }
int64_t block_values(DType plain) { return static_cast<int64_t>(dtype_info(plain).block_elements); }

// One superblock: 16 rows' block b (row i at rows[i], null past N).
void write_superblock(DType plain, const uint8_t* const rows[kInterleaveRows], uint8_t* out) {
  const bool w8a8 = plain == DType::kW8A8;  // Q8_0's layout with the codes already q + 128
  const bool q8 = plain == DType::kQ8_0 || w8a8;
  const bool mins = plain == DType::kQ4_1 || plain == DType::kQ5_1;  // d, m, ...
  const bool q5 = plain == DType::kQ5_0 || plain == DType::kQ5_1;
  const int64_t qh_at = mins ? 4 : 2;  // Q5_0 / Q5_1: the high bits after the scale(s)
  const int64_t nibbles_at = qh_at + (q5 ? 4 : 0);
  uint64_t high_masks[8] = {};
  for (int64_t i = 0; i < kInterleaveRows; ++i) {
    const uint8_t* src = rows[i];
    if (src != nullptr) {
      std::memcpy(out + 2 * i, src, 2);
      if (mins) std::memcpy(out + kScaleBytes + 2 * i, src + 2, 2);
    } else {
      std::memset(out + 2 * i, 0, 2);  // padding row: scale 0 (and min 0), codes of value 0
      if (mins) std::memset(out + kScaleBytes + 2 * i, 0, 2);
    }
    uint8_t* codes = out + kScaleBytes * (mins ? 2 : 1);
    // 4 codes at a time; Q8_0 flips their sign bits (q + 128), Q4_0/Q5_0/IQ4_NL nibble bytes move as they are.
    const uint32_t flip = q8 && !w8a8 ? 0x80808080u : 0u;
    // Codes of value 0 (Q5_0: 16 = high bit; IQ4_NL has no 0, but padding rows' scales are 0).
    const uint32_t padding = q8 ? 0x80808080u : q5 || mins ? 0u : 0x88888888u;
    for (int64_t j = 0; j < (q8 ? 8 : 4); ++j) {
      uint32_t quad = padding;
      if (src != nullptr) {
        std::memcpy(&quad, src + nibbles_at + 4 * j, 4);
        quad ^= flip;
      }
      std::memcpy(codes + 64 * j + 4 * i, &quad, 4);
    }
    if (q5) {
      uint32_t qh = mins ? 0u : 0xFFFFFFFFu;  // padding: Q5_0's code 16 = value 0
      if (src != nullptr) std::memcpy(&qh, src + qh_at, 4);
      for (int64_t v = 0; v < kBlock; ++v)
        high_masks[v / 4] |= static_cast<uint64_t>((qh >> v) & 1u) << (4 * i + v % 4);
    }
  }
  if (q5) std::memcpy(out + kScaleBytes * (mins ? 2 : 1) + 4 * 64, high_masks, sizeof(high_masks));
}

// An I8Z32x16 or I4Z32x16 superblock (see the header): 16 rows' block b. File blocks: d, z, qs.
void write_intz_superblock(bool int8, const uint8_t* const rows[kInterleaveRows], uint8_t* out) {
  for (int64_t i = 0; i < kInterleaveRows; ++i) {
    static constexpr uint8_t kZero[35] = {};
    const uint8_t* src = rows[i] != nullptr ? rows[i] : kZero;  // padding row: d = 0, z = 0, codes 0
    std::memcpy(out + 2 * i, src, 2);
    out[IntZx16Layout::kZerosAt + i] = src[2];
    for (int64_t j = 0; j < (int8 ? 8 : 4); ++j) std::memcpy(out + IntZx16Layout::kCodesAt + 64 * j + 4 * i, src + 3 + 4 * j, 4);
  }
}

// An IQ4_XSx16 superblock (see the header): 16 rows' block b. File block: d, scales_h, scales_l[4], qs[128].
void write_iq4_xs_superblock(const uint8_t* const rows[kInterleaveRows], uint8_t* out) {
  using L = Iq4XsX16Layout;
  for (int64_t i = 0; i < kInterleaveRows; ++i) {
    static constexpr uint8_t kZero[136] = {};
    const uint8_t* src = rows[i] != nullptr ? rows[i] : kZero;  // padding row: d = 0
    std::memcpy(out + 2 * i, src, 2);
    std::memcpy(out + L::kScalesHighAt + 2 * i, src + 2, 2);
    std::memcpy(out + L::kScalesLowAt + 4 * i, src + 4, 4);
    for (int64_t s = 0; s < 8; ++s)
      for (int64_t p = 0; p < 4; ++p) std::memcpy(out + L::kCodesAt + L::kSubBlockBytes * s + 64 * p + 4 * i, src + 8 + 16 * s + 4 * p, 4);
  }
}

// A Q4_K or Q5_K superblock (see the header): 16 rows' block b. File blocks: d, dmin, scales[12],
// (Q5_K: qh[32],) qs[128].
constexpr int64_t kQkScalesAt = 64, kQkCodesAt = 256, kQ5kHighAt = 2304;
void write_q45k_superblock(bool q5, const uint8_t* const rows[kInterleaveRows], uint8_t* out) {
  const int64_t qs_at = q5 ? 48 : 16;
  for (int64_t i = 0; i < kInterleaveRows; ++i) {
    static constexpr uint8_t kZero[176] = {};
    const uint8_t* src = rows[i] != nullptr ? rows[i] : kZero;  // padding row: d = dmin = 0, codes 0
    std::memcpy(out + 2 * i, src, 2);
    std::memcpy(out + 32 + 2 * i, src + 2, 2);
    for (int64_t w = 0; w < 3; ++w) std::memcpy(out + kQkScalesAt + 64 * w + 4 * i, src + 4 + 4 * w, 4);
    for (int64_t chunk = 0; chunk < 32; ++chunk) std::memcpy(out + kQkCodesAt + 64 * chunk + 4 * i, src + qs_at + 4 * chunk, 4);
  }
  if (!q5) return;
  uint64_t masks[64] = {};  // mask 16 c + 8 h + p, bit 4 i + t: bit 2 c + h of row i's qh[4 p + t]
  for (int64_t i = 0; i < kInterleaveRows; ++i) {
    if (rows[i] == nullptr) continue;  // padding: fifth bits 0
    for (int64_t p = 0; p < 8; ++p) {
      uint32_t quad;  // qh[4 p .. 4 p + 3]
      std::memcpy(&quad, rows[i] + 16 + 4 * p, 4);
      for (int bit = 0; bit < 8; ++bit) {
        // That bit of the 4 bytes, gathered into bits 28..31 by one multiply (the other partial
        // products land below bit 28, at distinct positions, so nothing carries into them).
        const uint32_t t4 = (((quad >> bit) & 0x01010101u) * 0x10204080u) >> 28;
        masks[16 * (bit / 2) + 8 * (bit % 2) + p] |= static_cast<uint64_t>(t4) << (4 * i);
      }
    }
  }
  std::memcpy(out + kQ5kHighAt, masks, sizeof(masks));
}

// A Q2_K or Q3_K superblock (see the header). File blocks: Q2_K scales[16], qs[64], d, dmin;
// Q3_K hmask[32], qs[64], scales[12], d.
constexpr int64_t kQ2kScalesAt = 64, kQ2kCodesAt = 320, kQ3kScalesAt = 32, kQ3kCodesAt = 224, kQ3kHighAt = 1248;
void write_q23k_superblock(bool q3, const uint8_t* const rows[kInterleaveRows], uint8_t* out) {
  const int64_t qs_at = q3 ? 32 : 16, scales_at = q3 ? 96 : 0, d_at = q3 ? 108 : 80;
  const int64_t out_scales = q3 ? kQ3kScalesAt : kQ2kScalesAt, out_codes = q3 ? kQ3kCodesAt : kQ2kCodesAt;
  uint64_t masks[64] = {};  // Q3_K: mask 8 c + p, bit 4 i + t: bit c of row i's hmask[4 p + t]
  for (int64_t i = 0; i < kInterleaveRows; ++i) {
    static constexpr uint8_t kZero[110] = {};
    const uint8_t* src = rows[i] != nullptr ? rows[i] : kZero;  // padding row: d = dmin = 0
    std::memcpy(out + 2 * i, src + d_at, 2);
    if (!q3) std::memcpy(out + 32 + 2 * i, src + d_at + 2, 2);
    for (int64_t w = 0; w < (q3 ? 3 : 4); ++w) std::memcpy(out + out_scales + 64 * w + 4 * i, src + scales_at + 4 * w, 4);
    for (int64_t k = 0; k < 16; ++k) std::memcpy(out + out_codes + 64 * k + 4 * i, src + qs_at + 4 * k, 4);
    if (!q3 || rows[i] == nullptr) continue;
    for (int64_t p = 0; p < 8; ++p) {
      uint32_t quad;
      std::memcpy(&quad, src + 4 * p, 4);
      for (int c = 0; c < 8; ++c)  // bit c of the 4 bytes into bits 28..31 (see write_q45k_superblock)
        masks[8 * c + p] |= static_cast<uint64_t>((((quad >> c) & 0x01010101u) * 0x10204080u) >> 28) << (4 * i);
    }
  }
  if (q3) std::memcpy(out + kQ3kHighAt, masks, sizeof(masks));
}

// A Q6_K superblock (see the header): 16 rows' block b. File block: ql[128], qh[64], scales[16], d.
constexpr int64_t kQ6kScalesAt = 32, kQ6kLowAt = 288, kQ6kHighAt = 2336;
void write_q6k_superblock(const uint8_t* const rows[kInterleaveRows], uint8_t* out) {
  for (int64_t i = 0; i < kInterleaveRows; ++i) {
    static constexpr uint8_t kZero[210] = {};
    const uint8_t* src = rows[i] != nullptr ? rows[i] : kZero;  // padding row: d = 0, scales 0
    std::memcpy(out + 2 * i, src + 208, 2);
    for (int64_t w = 0; w < 4; ++w) std::memcpy(out + kQ6kScalesAt + 64 * w + 4 * i, src + 192 + 4 * w, 4);
    for (int64_t c = 0; c < 32; ++c) std::memcpy(out + kQ6kLowAt + 64 * c + 4 * i, src + 4 * c, 4);
    for (int64_t c = 0; c < 16; ++c) std::memcpy(out + kQ6kHighAt + 64 * c + 4 * i, src + 128 + 4 * c, 4);
  }
}

// BF16x16 (see the header): group g's chunk c holds rows' value pairs (2 c, 2 c + 1) side by side.
void interleave_bf16(const uint16_t* rows, int64_t N, int64_t K, uint16_t* out) {
  for (int64_t g = 0; g * kInterleaveRows < N; ++g) {
    uint16_t* group = out + g * kInterleaveRows * K;
    for (int64_t i = 0; i < kInterleaveRows; ++i) {
      const int64_t n = g * kInterleaveRows + i;
      for (int64_t c = 0; c < K / 2; ++c) {
        uint16_t* pair = group + c * 2 * kInterleaveRows + 2 * i;
        pair[0] = n < N ? rows[n * K + 2 * c] : 0;
        pair[1] = n < N ? rows[n * K + 2 * c + 1] : 0;
      }
    }
  }
}

// F16x16 (see the header): group g's chunk k holds the 16 rows' value k side by side.
void interleave_f16(const uint16_t* rows, int64_t N, int64_t K, uint16_t* out) {
  for (int64_t g = 0; g * kInterleaveRows < N; ++g) {
    uint16_t* group = out + g * kInterleaveRows * K;
    for (int64_t i = 0; i < kInterleaveRows; ++i) {
      const int64_t n = g * kInterleaveRows + i;
      for (int64_t k = 0; k < K; ++k) group[k * kInterleaveRows + i] = n < N ? rows[n * K + k] : 0;
    }
  }
}

// Row i of a superblock back into its file block (the inverse of write_superblock /
// write_q4k_superblock).
void read_file_block(DType plain, const uint8_t* super, int64_t i, uint8_t* block) {
  if (plain == DType::kI8Z32 || plain == DType::kI4Z32) {
    std::memcpy(block, super + 2 * i, 2);
    block[2] = super[IntZx16Layout::kZerosAt + i];
    for (int64_t j = 0; j < (plain == DType::kI8Z32 ? 8 : 4); ++j)
      std::memcpy(block + 3 + 4 * j, super + IntZx16Layout::kCodesAt + 64 * j + 4 * i, 4);
    return;
  }
  if (plain == DType::kQ2_K || plain == DType::kQ3_K) {
    const bool q3 = plain == DType::kQ3_K;
    const int64_t qs_at = q3 ? 32 : 16, scales_at = q3 ? 96 : 0, d_at = q3 ? 108 : 80;
    std::memcpy(block + d_at, super + 2 * i, 2);
    if (!q3) std::memcpy(block + d_at + 2, super + 32 + 2 * i, 2);
    for (int64_t w = 0; w < (q3 ? 3 : 4); ++w)
      std::memcpy(block + scales_at + 4 * w, super + (q3 ? kQ3kScalesAt : kQ2kScalesAt) + 64 * w + 4 * i, 4);
    for (int64_t k = 0; k < 16; ++k) std::memcpy(block + qs_at + 4 * k, super + (q3 ? kQ3kCodesAt : kQ2kCodesAt) + 64 * k + 4 * i, 4);
    if (q3) {
      uint64_t masks[64];
      std::memcpy(masks, super + kQ3kHighAt, sizeof(masks));
      for (int64_t l = 0; l < 32; ++l) {
        uint8_t h = 0;
        for (int64_t c = 0; c < 8; ++c) h |= static_cast<uint8_t>(((masks[8 * c + l / 4] >> (4 * i + l % 4)) & 1u) << c);
        block[l] = h;
      }
    }
    return;
  }
  if (plain == DType::kIQ4_XS) {
    using L = Iq4XsX16Layout;
    std::memcpy(block, super + 2 * i, 2);
    std::memcpy(block + 2, super + L::kScalesHighAt + 2 * i, 2);
    std::memcpy(block + 4, super + L::kScalesLowAt + 4 * i, 4);
    for (int64_t s = 0; s < 8; ++s)
      for (int64_t p = 0; p < 4; ++p) std::memcpy(block + 8 + 16 * s + 4 * p, super + L::kCodesAt + L::kSubBlockBytes * s + 64 * p + 4 * i, 4);
    return;
  }
  if (plain == DType::kQ6_K) {
    std::memcpy(block + 208, super + 2 * i, 2);
    for (int64_t w = 0; w < 4; ++w) std::memcpy(block + 192 + 4 * w, super + kQ6kScalesAt + 64 * w + 4 * i, 4);
    for (int64_t c = 0; c < 32; ++c) std::memcpy(block + 4 * c, super + kQ6kLowAt + 64 * c + 4 * i, 4);
    for (int64_t c = 0; c < 16; ++c) std::memcpy(block + 128 + 4 * c, super + kQ6kHighAt + 64 * c + 4 * i, 4);
    return;
  }
  if (plain == DType::kQ4_K || plain == DType::kQ5_K) {
    const bool q5 = plain == DType::kQ5_K;
    const int64_t qs_at = q5 ? 48 : 16;
    std::memcpy(block, super + 2 * i, 2);
    std::memcpy(block + 2, super + 32 + 2 * i, 2);
    for (int64_t w = 0; w < 3; ++w) std::memcpy(block + 4 + 4 * w, super + kQkScalesAt + 64 * w + 4 * i, 4);
    for (int64_t chunk = 0; chunk < 32; ++chunk) std::memcpy(block + qs_at + 4 * chunk, super + kQkCodesAt + 64 * chunk + 4 * i, 4);
    if (q5) {
      uint64_t masks[64];
      std::memcpy(masks, super + kQ5kHighAt, sizeof(masks));
      for (int64_t l = 0; l < 32; ++l) {
        uint8_t qh = 0;
        for (int64_t bit = 0; bit < 8; ++bit)
          qh |= static_cast<uint8_t>(((masks[16 * (bit / 2) + 8 * (bit % 2) + l / 4] >> (4 * i + l % 4)) & 1u) << bit);
        block[16 + l] = qh;
      }
    }
    return;
  }
  const bool q8 = plain == DType::kQ8_0 || plain == DType::kW8A8;
  const bool mins = plain == DType::kQ4_1 || plain == DType::kQ5_1;
  const bool q5 = plain == DType::kQ5_0 || plain == DType::kQ5_1;
  const int64_t qh_at = mins ? 4 : 2;
  std::memcpy(block, super + 2 * i, 2);
  if (mins) std::memcpy(block + 2, super + kScaleBytes + 2 * i, 2);
  const uint8_t* codes = super + kScaleBytes * (mins ? 2 : 1);
  uint8_t* out_codes = block + qh_at + (q5 ? 4 : 0);
  for (int64_t j = 0; j < (q8 ? 8 : 4); ++j) {
    uint32_t quad;
    std::memcpy(&quad, codes + 64 * j + 4 * i, 4);
    if (plain == DType::kQ8_0) quad ^= 0x80808080u;
    std::memcpy(out_codes + 4 * j, &quad, 4);
  }
  if (q5) {
    uint64_t masks[8];
    std::memcpy(masks, codes + 4 * 64, sizeof(masks));
    uint32_t qh = 0;
    for (int64_t v = 0; v < kBlock; ++v) qh |= static_cast<uint32_t>((masks[v / 4] >> (4 * i + v % 4)) & 1u) << v;
    std::memcpy(block + qh_at, &qh, 4);
  }
}

}  // namespace

void read_interleaved_row(DType plain, const void* data, int64_t K, int64_t row, float* out) {
  if (!has_interleaved_form(plain)) fail<InvalidArgument>("read_interleaved_row: {} has no interleaved form", dtype_name(plain));
  const int64_t g = row / kInterleaveRows, i = row % kInterleaveRows;
  const auto* base = static_cast<const uint8_t*>(data);
  if (plain == DType::kBF16) {
    const auto* group = reinterpret_cast<const uint16_t*>(base) + g * kInterleaveRows * K;
    for (int64_t k = 0; k < K; ++k) out[k] = bf16_to_f32(group[k / 2 * 2 * kInterleaveRows + 2 * i + k % 2]);
    return;
  }
  if (plain == DType::kF16) {
    const auto* group = reinterpret_cast<const uint16_t*>(base) + g * kInterleaveRows * K;
    for (int64_t k = 0; k < K; ++k) out[k] = f16_to_f32(group[k * kInterleaveRows + i]);
    return;
  }
  const int64_t values = block_values(plain), blocks = K / values, bb = block_bytes(plain);
  const uint8_t* group = base + g * blocks * kInterleaveRows * bb;
  uint8_t block[256];  // the largest file block here (Q6_K: 210 bytes)
  for (int64_t b = 0; b < blocks; ++b) {
    read_file_block(plain, group + b * kInterleaveRows * bb, i, block);
    dequantize_row(plain, block, out + b * values, values);
  }
}

bool has_interleaved_form(DType plain) {
  switch (plain) {
    case DType::kQ8_0: case DType::kQ4_0: case DType::kQ5_0: case DType::kQ4_1: case DType::kQ5_1:
    case DType::kQ2_K: case DType::kQ3_K: case DType::kQ4_K: case DType::kQ5_K: case DType::kQ6_K:
    case DType::kIQ4_NL: case DType::kIQ4_XS: case DType::kI8Z32: case DType::kI4Z32: case DType::kW8A8:
    case DType::kBF16: case DType::kF16:
      return true;
    default:
      return false;
  }
}

size_t interleaved_bytes(DType plain, int64_t N, int64_t K) {
  const int64_t groups = (N + kInterleaveRows - 1) / kInterleaveRows;
  return static_cast<size_t>(groups * kInterleaveRows * (K / block_values(plain)) * block_bytes(plain));
}

void interleave_rows(DType plain, const void* rows, int64_t N, int64_t K, void* out) {
  if (!has_interleaved_form(plain) || K % format_block_values(interleaved(plain)) != 0)
    fail<InvalidArgument>("interleave_rows: {} rows of {} values have no interleaved form", dtype_name(plain), K);
  if (plain == DType::kBF16) {
    interleave_bf16(static_cast<const uint16_t*>(rows), N, K, static_cast<uint16_t*>(out));
    return;
  }
  if (plain == DType::kF16) {
    interleave_f16(static_cast<const uint16_t*>(rows), N, K, static_cast<uint16_t*>(out));
    return;
  }
  const int64_t blocks = K / block_values(plain);
  const int64_t bb = block_bytes(plain);
  const int64_t row_bytes = blocks * bb;
  const int64_t super_bytes = kInterleaveRows * bb;
  const auto* src = static_cast<const uint8_t*>(rows);
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t g = 0; g * kInterleaveRows < N; ++g) {
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* group_rows[kInterleaveRows];
      for (int64_t i = 0; i < kInterleaveRows; ++i) {
        const int64_t n = g * kInterleaveRows + i;
        group_rows[i] = n < N ? src + n * row_bytes + b * bb : nullptr;
      }
      uint8_t* super = dst + (g * blocks + b) * super_bytes;
      if (plain == DType::kQ4_K || plain == DType::kQ5_K) {
        write_q45k_superblock(plain == DType::kQ5_K, group_rows, super);
      } else if (plain == DType::kQ2_K || plain == DType::kQ3_K) {
        write_q23k_superblock(plain == DType::kQ3_K, group_rows, super);
      } else if (plain == DType::kQ6_K) {
        write_q6k_superblock(group_rows, super);
      } else if (plain == DType::kIQ4_XS) {
        write_iq4_xs_superblock(group_rows, super);
      } else if (plain == DType::kI8Z32 || plain == DType::kI4Z32) {
        write_intz_superblock(plain == DType::kI8Z32, group_rows, super);
      } else {
        write_superblock(plain, group_rows, super);
      }
    }
  }
}

void make_int8_activations_signed(int64_t M, int64_t K, void* out) {
  auto* base = static_cast<uint8_t*>(out);
  const int64_t blocks = K / kBlock;
  for (int64_t m = 0; m < M; ++m) {
    uint8_t* codes = base + m * int8_signed_row_bytes(K);
    for (int64_t k = 0; k < int8_codes_stride(K); ++k) codes[k] = static_cast<uint8_t>(codes[k] ^ 0x80u);
    auto* sums = reinterpret_cast<int32_t*>(codes + int8_row_bytes(K));
    for (int64_t b = 0; b < int8_scales_stride(K); ++b) {
      int32_t sum = 0;
      if (b < blocks)
        for (int64_t t = 0; t < kBlock; ++t) sum += static_cast<int8_t>(codes[b * kBlock + t]);
      sums[b] = sum;
    }
  }
}

}  // namespace lemma::kernels
