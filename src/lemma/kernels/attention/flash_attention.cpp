// The flash-attention split kernel of an ISA (kernel_set.h), the list tests loop over, and the
// (ISA-independent) merge of partials.
#include "lemma/kernels/attention/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lemma/kernels/attention/flash_attention_isa.h"
#include "lemma/kernels/attention/kv_dtype.h"
#include "lemma/kernels/kernel_set.h"

namespace lemma::kernels {

namespace {
using SplitFn = void (*)(const FlashSplitArgs&);

// What Isa::kAmx runs, with another tile kernel (the emulated one, for tests).
template <SplitFn Tiles>
void amx_or_avx512(const FlashSplitArgs& args) {
  constexpr int64_t kAmxMaxHeadDim = 256;  // as kernel_set.cpp's choice
  if (args.kv_dtype == KvDtype::kBf16 && args.head_dim <= kAmxMaxHeadDim) {
    Tiles(args);
  } else {
    kernel_set(Isa::kAvx512).flash_split()(args);
  }
}
}  // namespace

void flash_attention_split(const FlashSplitArgs& args, Isa isa) { kernel_set(isa).flash_split()(args); }

std::vector<FlashSplitKernel> flash_split_kernels() {
  std::vector<FlashSplitKernel> kernels{{"scalar", Isa::kScalar, flash_split_reference}};
  const Isa top = detected_isa();
  if (top >= Isa::kAvx2) kernels.push_back({"avx2", Isa::kAvx2, x86::avx2::flash_split});
  if (top >= Isa::kAvx512) kernels.push_back({"avx512", Isa::kAvx512, x86::avx512::flash_split});
  if (top >= Isa::kAvx512 && cpu_features().avx512_bf16)
    kernels.push_back({"avx512_bf16", Isa::kAvx512, x86::avx512_bf16::flash_split});
  // The AMX kernel's logic on the tile emulator, on every AVX-512 machine (never what an ISA runs).
  if (top >= Isa::kAvx512)
    kernels.push_back({"amx_emulated", Isa::kAvx512, amx_or_avx512<x86::flash_split_amx_bf16_emulated>});
  if (top >= Isa::kAmx) kernels.push_back({"amx", Isa::kAmx, kernel_set(Isa::kAmx).flash_split()});
  return kernels;
}
void flash_attention_split(const FlashSplitArgs& args) { flash_attention_split(args, detected_isa()); }

void flash_merge(float* total, const float* part, int64_t head_dim) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (part[0] == kNegInf || part == total) return;
  if (total[0] == kNegInf) {
    std::copy(part, part + head_dim + 2, total);
    return;
  }
  const float m = std::max(total[0], part[0]);
  const float a = std::exp(total[0] - m), b = std::exp(part[0] - m);
  total[0] = m;
  total[1] = total[1] * a + part[1] * b;
  for (int64_t d = 0; d < head_dim; ++d) total[2 + d] = total[2 + d] * a + part[2 + d] * b;
}

void flash_finish(const float* total, int64_t head_dim, float* out) {
  if (total[1] == 0.0f) {  // no key seen (a NaN sum stays NaN below)
    std::fill(out, out + head_dim, 0.0f);
    return;
  }
  const float inv = 1.0f / total[1];
  for (int64_t d = 0; d < head_dim; ++d) out[d] = total[2 + d] * inv;
}

}  // namespace lemma::kernels
