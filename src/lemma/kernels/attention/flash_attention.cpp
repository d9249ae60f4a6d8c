// Dispatch of the flash-attention split kernel by ISA, and the (ISA-independent) merge of partials.
#include "lemma/kernels/attention/flash_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lemma/kernels/attention/flash_attention_isa.h"

namespace lemma::kernels {

namespace {
using SplitFn = void (*)(const FlashSplitArgs&);

// AVX-512: the AVX512_BF16 build where the CPU has it (it differs only for bf16 caches).
SplitFn avx512_kernel() {
  static const SplitFn fn = cpu_features().avx512_bf16 ? x86::avx512_bf16::flash_split : x86::avx512::flash_split;
  return fn;
}

// AMX: the tile kernel `Tiles` for a bf16 cache with heads of at most kAmxMaxHeadDim, the AVX-512
// kernel for everything else (per model and cache dtype the choice never changes, so neither do
// the bits).
constexpr int64_t kAmxMaxHeadDim = 256;
template <SplitFn Tiles>
void amx_or_avx512(const FlashSplitArgs& args) {
  if (args.kv_dtype == KvDtype::kBf16 && args.head_dim <= kAmxMaxHeadDim) {
    Tiles(args);
  } else {
    avx512_kernel()(args);
  }
}
}  // namespace

void flash_attention_split(const FlashSplitArgs& args, Isa isa) {
  switch (isa) {
    case Isa::kScalar: flash_split_reference(args); return;
    case Isa::kAvx2: x86::avx2::flash_split(args); return;
    case Isa::kAvx512: avx512_kernel()(args); return;
    case Isa::kAmx: amx_or_avx512<x86::flash_split_amx_bf16>(args); return;
  }
}

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
  if (top >= Isa::kAmx) kernels.push_back({"amx", Isa::kAmx, amx_or_avx512<x86::flash_split_amx_bf16>});
  return kernels;
}
void flash_attention_split(const FlashSplitArgs& args) { flash_attention_split(args, active_isa()); }

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
