#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/reference/lemma_int.h"

#include <cassert>
#include <cstring>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/quant_blocks.h"

namespace lemma::kernels {

namespace {

// Each function keeps ggml's float expression order, e.g. (d * sc) * q - (dmin * m), so results
// are bit-identical. This file is compiled without FMA, so nothing is contracted.

void from_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void from_f16(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
}

void from_bf16(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
}

void from_q4_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_0*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>((blocks[b].qs[j] & 0x0F) - 8) * d;
      dst[j + kQK / 2] = static_cast<float>((blocks[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void from_q4_1(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_1*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    const float m = f16_to_f32(blocks[b].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(blocks[b].qs[j] & 0x0F) * d + m;
      dst[j + kQK / 2] = static_cast<float>(blocks[b].qs[j] >> 4) * d + m;
    }
  }
}

uint32_t load_qh(const uint8_t* qh) {
  uint32_t value;
  std::memcpy(&value, qh, sizeof(value));
  return value;  // little-endian host
}

void from_q5_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_0*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    const uint32_t qh = load_qh(blocks[b].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int high0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int high1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      dst[j] = static_cast<float>(((blocks[b].qs[j] & 0x0F) | high0) - 16) * d;
      dst[j + kQK / 2] = static_cast<float>(((blocks[b].qs[j] >> 4) | high1) - 16) * d;
    }
  }
}

void from_q5_1(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_1*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    const float m = f16_to_f32(blocks[b].m);
    const uint32_t qh = load_qh(blocks[b].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int high0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int high1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      dst[j] = static_cast<float>((blocks[b].qs[j] & 0x0F) | high0) * d + m;
      dst[j + kQK / 2] = static_cast<float>((blocks[b].qs[j] >> 4) | high1) * d + m;
    }
  }
}

void from_q8_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(blocks[b].qs[j]) * d;
  }
}

void from_q4_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_K*>(src);
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    const float dmin = f16_to_f32(blocks[b].dmin);
    const uint8_t* q = blocks[b].qs;
    uint8_t sc[8], mn[8];
    unpack_k4_scales(blocks[b].scales, sc, mn);
    for (int group = 0; group < 4; ++group, q += 32) {
      const float d1 = d * sc[2 * group], m1 = dmin * mn[2 * group];
      const float d2 = d * sc[2 * group + 1], m2 = dmin * mn[2 * group + 1];
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void from_q5_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_K*>(src);
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    const float dmin = f16_to_f32(blocks[b].dmin);
    const uint8_t* ql = blocks[b].qs;
    const uint8_t* qh = blocks[b].qh;
    uint8_t sc[8], mn[8];
    unpack_k4_scales(blocks[b].scales, sc, mn);
    for (int group = 0; group < 4; ++group, ql += 32) {
      const uint8_t bit_lo = static_cast<uint8_t>(1u << (2 * group));
      const uint8_t bit_hi = static_cast<uint8_t>(2u << (2 * group));
      const float d1 = d * sc[2 * group], m1 = dmin * mn[2 * group];
      const float d2 = d * sc[2 * group + 1], m2 = dmin * mn[2 * group + 1];
      for (int l = 0; l < 32; ++l) {
        *dst++ = d1 * static_cast<float>((ql[l] & 0x0F) + ((qh[l] & bit_lo) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *dst++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & bit_hi) ? 16 : 0)) - m2;
      }
    }
  }
}

void from_q2_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ2_K*>(src);
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    const float dmin = f16_to_f32(blocks[b].dmin);
    const uint8_t* q = blocks[b].qs;
    int s = 0;
    // Two halves of 128 values; within a half, 2-bit field f of byte l feeds values 32f + l.
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int field = 0; field < 4; ++field) {
        for (int part = 0; part < 2; ++part, ++s) {  // 16 values per sub-block
          const uint8_t sc = blocks[b].scales[s];
          const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            *dst++ = dl * static_cast<float>((q[l] >> (2 * field)) & 3) - ml;
          }
        }
      }
    }
  }
}

void from_q3_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ3_K*>(src);
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    const uint8_t* q = blocks[b].qs;
    const uint8_t* hmask = blocks[b].hmask;
    int s = 0;
    uint8_t bit = 1;  // hmask bit of the current 32-value group (i / 32)
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int field = 0; field < 4; ++field, bit = static_cast<uint8_t>(bit << 1)) {
        for (int part = 0; part < 2; ++part, ++s) {
          const float dl = d * static_cast<float>(unpack_k3_scale(blocks[b].scales, s));
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int value = ((q[l] >> (2 * field)) & 3) - ((hmask[l] & bit) ? 0 : 4);
            *dst++ = dl * static_cast<float>(value);
          }
        }
      }
    }
  }
}

void from_q6_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ6_K*>(src);
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    const uint8_t* ql = blocks[b].ql;
    const uint8_t* qh = blocks[b].qh;
    const int8_t* sc = blocks[b].scales;
    // Two halves of 128 values; each byte position l feeds values l, l+32, l+64, l+96.
    for (int half = 0; half < 2; ++half, dst += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void from_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(kIq4Values[blocks[b].qs[j] & 0x0F]);
      dst[j + kQK / 2] = d * static_cast<float>(kIq4Values[blocks[b].qs[j] >> 4]);
    }
  }
}

void from_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t b = 0; b < n / kQKK; ++b) {
    const BlockIQ4_XS& block = blocks[b];
    const float d = f16_to_f32(block.d);
    for (int s = 0; s < kQKK / kQK; ++s, dst += kQK) {
      const float dl = d * static_cast<float>(iq4_xs_scale(block.scales_h, block.scales_l, s));
      const uint8_t* qs = block.qs + s * (kQK / 2);
      for (int j = 0; j < kQK / 2; ++j) {
        dst[j] = dl * static_cast<float>(kIq4Values[qs[j] & 0x0F]);
        dst[j + kQK / 2] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
      }
    }
  }
}

struct Entry {
  DType type;
  DequantizeFn fn;
};
constexpr Entry kTable[] = {
    {DType::kF32, from_f32},   {DType::kF16, from_f16},   {DType::kBF16, from_bf16},
    {DType::kQ4_0, from_q4_0}, {DType::kQ4_1, from_q4_1}, {DType::kQ5_0, from_q5_0},
    {DType::kQ5_1, from_q5_1}, {DType::kQ8_0, from_q8_0}, {DType::kQ4_K, from_q4_k},
    {DType::kQ5_K, from_q5_k}, {DType::kQ6_K, from_q6_k}, {DType::kQ2_K, from_q2_k},
    {DType::kQ3_K, from_q3_k}, {DType::kIQ4_NL, from_iq4_nl}, {DType::kIQ4_XS, from_iq4_xs},
    // lemma's in-memory integer blocks (reference/lemma_int.cpp)
    {DType::kI8Z32, decode_i8z32_reference}, {DType::kI4Z32, decode_i4z32_reference},
    {DType::kW8A8, decode_w8a8_reference},
};

}  // namespace

DequantizeFn dequantize_fn(DType type) {
  for (const Entry& e : kTable) {
    if (e.type == type) return e.fn;
  }
  return nullptr;
}

bool can_dequantize(DType type) { return dequantize_fn(type) != nullptr; }

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  DequantizeFn fn = dequantize_fn(type);
  if (fn == nullptr) fail<Unsupported>("cannot dequantize dtype {}", dtype_name(type));
  assert(n % static_cast<int64_t>(dtype_info(type).block_elements) == 0);
  fn(src, dst, n);
}

}  // namespace lemma::kernels
