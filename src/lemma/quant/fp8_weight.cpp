#include "lemma/quant/fp8_weight.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"

namespace lemma::quant {

float e4m3_to_f32(uint8_t code) {
  const float sign = (code & 0x80) ? -1.0f : 1.0f;
  const int exponent = (code >> 3) & 0xF, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return std::nanf("");
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

uint8_t f32_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7F;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float a = std::fabs(value);
  if (a >= 448.0f) return sign | 0x7E;
  if (a < std::ldexp(1.0f, -6)) {  // subnormal: multiples of 2^-9; 8 * 2^-9 is the smallest normal (0x08)
    return sign | static_cast<uint8_t>(std::nearbyint(std::ldexp(a, 9)));
  }
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  e -= 1;             // a = m * 2^e, m in [1, 2)
  int mantissa = static_cast<int>(std::nearbyint((std::ldexp(a, -e) - 1.0f) * 8.0f));
  if (mantissa == 8) {
    mantissa = 0;
    ++e;
  }
  const int code = ((e + 7) << 3) | mantissa;
  return sign | static_cast<uint8_t>(std::min(code, 0x7E));
}

Fp8Weight quantize_fp8(std::span<const float> values, int64_t rows, int64_t cols, int64_t block) {
  if (rows <= 0 || cols <= 0 || static_cast<int64_t>(values.size()) != rows * cols || block < 0)
    fail<InvalidArgument>("{} values given for a [{}, {}] fp8 matrix (block {})", values.size(), rows, cols, block);
  Fp8Weight w;
  w.rows = rows;
  w.cols = cols;
  w.block = block;
  const int64_t bn = block == 0 ? rows : block, bk = block == 0 ? cols : block;
  w.scales.assign(static_cast<size_t>(w.block_rows() * w.block_cols()), 0.0f);
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 0; k < cols; ++k) {
      float& s = w.scales[static_cast<size_t>((n / bn) * w.block_cols() + k / bk)];
      s = std::max(s, std::fabs(values[static_cast<size_t>(n * cols + k)]));
    }
  for (float& s : w.scales) s = s == 0.0f ? 1.0f : s / 448.0f;
  w.codes.resize(values.size());
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 0; k < cols; ++k)
      w.codes[static_cast<size_t>(n * cols + k)] = f32_to_e4m3(values[static_cast<size_t>(n * cols + k)] / w.scale_at(n, k));
  return w;
}

std::vector<float> dequantize_fp8(const Fp8Weight& w) {
  std::vector<float> out(w.codes.size());
  for (int64_t n = 0; n < w.rows; ++n)
    for (int64_t k = 0; k < w.cols; ++k) {
      const auto i = static_cast<size_t>(n * w.cols + k);
      out[i] = e4m3_to_f32(w.codes[i]) * w.scale_at(n, k);
    }
  return out;
}

std::vector<uint16_t> fp8_to_bf16(const Fp8Weight& w) {
  const auto values = dequantize_fp8(w);
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = kernels::f32_to_bf16(values[i]);
  return out;
}

Fp8Weight read_fp8(const std::string& base, const TensorView& weight, const TensorView& scale, int64_t block) {
  if ((weight.dtype != DType::kF8E4M3 && weight.dtype != DType::kI8) || weight.shape.rank != 2)
    fail<FormatError>("FP8 tensor {}.weight: {} {}, expected F8_E4M3 [N, K]", base, dtype_name(weight.dtype),
                      weight.shape.to_string());
  Fp8Weight w;
  w.rows = weight.shape[0];
  w.cols = weight.shape[1];
  w.block = block;
  const char* scale_name = block == 0 ? "weight_scale" : "weight_scale_inv";
  const bool shape_ok = block == 0 ? scale.elements() == 1 && scale.shape.rank <= 1
                                   : scale.shape.rank == 2 && scale.shape[0] == w.block_rows() &&
                                         scale.shape[1] == w.block_cols();
  if (scale.dtype != DType::kF32 || !shape_ok)
    fail<FormatError>("FP8 tensor {}.{}: {} {}, expected F32 {}", base, scale_name, dtype_name(scale.dtype),
                      scale.shape.to_string(),
                      block == 0 ? std::string("[] or [1]")
                                 : "[" + std::to_string(w.block_rows()) + ", " + std::to_string(w.block_cols()) + "]");
  w.codes.resize(static_cast<size_t>(weight.elements()));
  std::memcpy(w.codes.data(), weight.data, w.codes.size());
  w.scales.resize(static_cast<size_t>(scale.elements()));
  std::memcpy(w.scales.data(), scale.data, w.scales.size() * sizeof(float));
  return w;
}

}  // namespace lemma::quant
