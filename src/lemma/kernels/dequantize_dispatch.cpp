// dequantize_fn(type, isa): vectorised decoders where they exist, else the reference one.
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/x86/simd/simd_kernels.h"

namespace lemma::kernels {

namespace {

struct Decoder {
  DType type;
  Isa isa;
  DequantizeFn fn;
};

constexpr Decoder kDecoders[] = {
    {DType::kQ8_0, Isa::kAvx2, x86::avx2::decode_q8_0},
    {DType::kQ4_0, Isa::kAvx2, x86::avx2::decode_q4_0},
    {DType::kQ4_K, Isa::kAvx2, x86::avx2::decode_q4_k},
    {DType::kQ5_K, Isa::kAvx2, x86::avx2::decode_q5_k},
    {DType::kQ6_K, Isa::kAvx2, x86::avx2::decode_q6_k},
    {DType::kQ8_0, Isa::kAvx512, x86::avx512::decode_q8_0},
    {DType::kQ4_0, Isa::kAvx512, x86::avx512::decode_q4_0},
    {DType::kQ4_K, Isa::kAvx512, x86::avx512::decode_q4_k},
    {DType::kQ5_K, Isa::kAvx512, x86::avx512::decode_q5_k},
    {DType::kQ6_K, Isa::kAvx512, x86::avx512::decode_q6_k},
};

}  // namespace

DequantizeFn dequantize_fn(DType type, Isa isa) {
  const Decoder* best = nullptr;
  for (const Decoder& d : kDecoders) {
    if (d.type == type && d.isa <= isa && (best == nullptr || d.isa > best->isa)) best = &d;
  }
  return best != nullptr ? best->fn : dequantize_fn(type);
}

}  // namespace lemma::kernels
