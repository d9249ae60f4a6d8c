#include "lemma/quant/ggml_quantize.h"
#include "lemma/quant/iq4_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/quant_blocks.h"

namespace lemma::quant {

using kernels::BlockQ4_0;
using kernels::BlockQ8_0;
using kernels::kQK;

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 block;
    block.d = kernels::f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) block.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    std::memcpy(&blocks[b], &block, sizeof(block));
  }
}

void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ4_0*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* x = src + b * kQK;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 block;
    block.d = kernels::f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[kQK / 2 + j] * id;
      const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x0 + 8.5f)));
      const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(x1 + 8.5f)));
      block.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    std::memcpy(&blocks[b], &block, sizeof(block));
  }
}

bool can_quantize_gguf(DType type) {
  return type == DType::kQ8_0 || type == DType::kQ4_0 || type == DType::kIQ4_NL || type == DType::kIQ4_XS ||
         type == DType::kF16 || type == DType::kBF16;
}

void quantize_row_gguf(DType type, const float* src, void* dst, int64_t n) {
  if (!can_quantize_gguf(type)) fail<Unsupported>("no quantizer for GGUF type {}", dtype_name(type));
  const auto block = static_cast<int64_t>(dtype_info(type).block_elements);
  if (n % block != 0) fail<InvalidArgument>("{} values do not fill whole {} blocks of {}", n, dtype_name(type), block);
  switch (type) {
    case DType::kQ8_0: quantize_row_q8_0(src, dst, n); break;
    case DType::kQ4_0: quantize_row_q4_0(src, dst, n); break;
    case DType::kIQ4_NL: quantize_row_iq4_nl(src, dst, n); break;
    case DType::kF16:
    case DType::kBF16: {  // round to nearest even, as ggml's conversions
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) out[i] = type == DType::kF16 ? kernels::f32_to_f16(src[i]) : kernels::f32_to_bf16(src[i]);
      break;
    }
    default: quantize_row_iq4_xs(src, dst, n); break;
  }
}

}  // namespace lemma::quant
