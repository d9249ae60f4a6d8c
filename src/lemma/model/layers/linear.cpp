#include "lemma/model/layers/linear.h"

#include <cassert>
#include <cstring>
#include <vector>

#include "lemma/base/error.h"

namespace lemma::layers {

namespace {

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bf16_to_f32(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float dot(const float* a, const float* b, int64_t n) {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

int64_t row_length(const TensorView& w) { return w.shape.rank == 1 ? w.shape[0] : w.shape[w.shape.rank - 1]; }

}  // namespace

bool is_supported_weight_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

void read_row(const TensorView& weight, int64_t row, std::span<float> out) {
  const int64_t k = row_length(weight);
  assert(static_cast<int64_t>(out.size()) >= k);
  switch (weight.dtype) {
    case DType::kF32:
      std::memcpy(out.data(), weight.as<float>() + row * k, static_cast<size_t>(k) * sizeof(float));
      return;
    case DType::kF16: {
      const uint16_t* src = weight.as<uint16_t>() + row * k;
      for (int64_t i = 0; i < k; ++i) out[static_cast<size_t>(i)] = f16_to_f32(src[i]);
      return;
    }
    case DType::kBF16: {
      const uint16_t* src = weight.as<uint16_t>() + row * k;
      for (int64_t i = 0; i < k; ++i) out[static_cast<size_t>(i)] = bf16_to_f32(src[i]);
      return;
    }
    default:
      fail<Unsupported>("weights of dtype {} are not supported yet", dtype_name(weight.dtype));
  }
}

void read_all_f32(const TensorView& tensor, std::span<float> out) {
  const int64_t k = row_length(tensor);
  const int64_t rows = k == 0 ? 0 : tensor.elements() / k;
  for (int64_t r = 0; r < rows; ++r) read_row(tensor, r, out.subspan(static_cast<size_t>(r * k)));
}

void linear(std::span<const float> x, int64_t M, const TensorView& weight, std::span<const float> bias,
            std::span<float> y) {
  const int64_t N = weight.shape[0];
  const int64_t K = weight.shape[1];
  assert(static_cast<int64_t>(x.size()) >= M * K && static_cast<int64_t>(y.size()) >= M * N);
  std::vector<float> row_buffer;
  if (weight.dtype != DType::kF32) row_buffer.resize(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    const float* w;
    if (weight.dtype == DType::kF32) {
      w = weight.as<float>() + n * K;
    } else {
      read_row(weight, n, row_buffer);
      w = row_buffer.data();
    }
    const float b = bias.empty() ? 0.0f : bias[static_cast<size_t>(n)];
    for (int64_t m = 0; m < M; ++m) y[static_cast<size_t>(m * N + n)] = dot(x.data() + m * K, w, K) + b;
  }
}

}  // namespace lemma::layers
