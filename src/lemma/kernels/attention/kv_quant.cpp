#include "lemma/kernels/attention/kv_quant.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "lemma/kernels/float_bits.h"

namespace lemma::kernels {

namespace {

constexpr float kInt8Max = 127.0f;
constexpr float kFp8Max = 448.0f;

// The row's largest magnitude, NaN if any value is NaN (std::max would drop it).
float absmax(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return std::numeric_limits<float>::quiet_NaN();
    m = std::max(m, std::fabs(x[i]));
  }
  return m;
}

// Shared by int8 and fp8: scale = absmax / max_code; encode(x / scale) per element.
template <typename Code, typename Encode>
void encode_scaled(const float* x, int64_t n, Code* dst, float* scale, float max_code, Encode encode) {
  const float s = absmax(x, n) / max_code;
  if (!std::isfinite(s)) {
    std::fill(dst, dst + n, Code{0});
    *scale = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  *scale = s;
  if (s == 0.0f) {
    std::fill(dst, dst + n, Code{0});
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = encode(x[i] / s);
}

int8_t float_to_int8(float x) {
  return static_cast<int8_t>(std::clamp(std::nearbyint(x), -kInt8Max, kInt8Max));
}

}  // namespace

float e4m3_to_float(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exponent = (code >> 3) & 0xFu, mantissa = code & 7u;
  if (exponent == 15 && mantissa == 7) return std::bit_cast<float>(sign | 0x7FC00000u);
  if (exponent == 0)  // subnormal: mantissa * 2^-9, exact in f32
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(static_cast<float>(mantissa) * 0x1p-9f));
  return std::bit_cast<float>(sign | ((exponent + 120) << 23) | (mantissa << 20));  // re-bias 7 -> 127
}

uint8_t float_to_e4m3(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const float a = std::fabs(x);
  if (std::isnan(x)) return sign | 0x7Fu;
  if (a >= kFp8Max) return sign | 0x7Eu;
  if (a < 0x1p-6f)  // subnormal range: a multiple of 2^-9 (8 * 2^-9 rounds up to the smallest normal)
    return sign | static_cast<uint8_t>(std::nearbyint(a * 0x1p9f));
  // Normal: keep 3 mantissa bits, round to nearest even (a carry moves into the exponent).
  const uint32_t m = bits & 0x7FFFFFFFu;
  const uint32_t rounded = (m + 0x7FFFFu + ((m >> 20) & 1u)) >> 20;
  return sign | static_cast<uint8_t>(std::min<uint32_t>(rounded - (120u << 3), 0x7Eu));
}

void kv_encode_row(KvDtype dtype, const float* x, int64_t n, void* dst, float* scale) {
  switch (dtype) {
    case KvDtype::kF32: std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float)); return;
    case KvDtype::kBf16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(x[i]);
      return;
    }
    case KvDtype::kInt8: encode_scaled(x, n, static_cast<int8_t*>(dst), scale, kInt8Max, float_to_int8); return;
    case KvDtype::kFp8: encode_scaled(x, n, static_cast<uint8_t*>(dst), scale, kFp8Max, float_to_e4m3); return;
  }
}

void kv_decode_row(KvDtype dtype, const void* row, float scale, int64_t n, float* out) {
  switch (dtype) {
    case KvDtype::kF32: std::memcpy(out, row, static_cast<size_t>(n) * sizeof(float)); return;
    case KvDtype::kBf16:
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
      return;
    case KvDtype::kInt8:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<const int8_t*>(row)[i]) * scale;
      return;
    case KvDtype::kFp8:
      for (int64_t i = 0; i < n; ++i) out[i] = e4m3_to_float(static_cast<const uint8_t*>(row)[i]) * scale;
      return;
  }
}

}  // namespace lemma::kernels
