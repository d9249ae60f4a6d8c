#include "lemma/kernels/convert.h"

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/x86/simd/simd_kernels.h"

namespace lemma::kernels {

namespace {

void f16_to_f32_scalar(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
void f32_to_f16_scalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
void bf16_to_f32_scalar(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}
void f32_to_bf16_scalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

struct ConvertKernels {
  void (*f16_to_f32)(const uint16_t*, float*, int64_t);
  void (*f32_to_f16)(const float*, uint16_t*, int64_t);
  void (*bf16_to_f32)(const uint16_t*, float*, int64_t);
  void (*f32_to_bf16)(const float*, uint16_t*, int64_t);
};

// Indexed by Isa; AMX has no conversion instructions of its own and uses AVX-512.
constexpr ConvertKernels kScalar{f16_to_f32_scalar, f32_to_f16_scalar, bf16_to_f32_scalar, f32_to_bf16_scalar};
namespace avx2 = x86::avx2;
namespace avx512 = x86::avx512;
constexpr ConvertKernels kAvx2{avx2::convert_f16_to_f32, avx2::convert_f32_to_f16, avx2::convert_bf16_to_f32, avx2::convert_f32_to_bf16};
constexpr ConvertKernels kAvx512{avx512::convert_f16_to_f32, avx512::convert_f32_to_f16, avx512::convert_bf16_to_f32,
                                 avx512::convert_f32_to_bf16};
constexpr ConvertKernels kByIsa[] = {kScalar, kAvx2, kAvx512, kAvx512};

const ConvertKernels& kernels_for(Isa isa) { return kByIsa[static_cast<int>(isa)]; }

}  // namespace

void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n, Isa isa) {
  kernels_for(isa).f16_to_f32(src, dst, n);
}
void convert_f32_to_f16(const float* src, uint16_t* dst, int64_t n, Isa isa) {
  kernels_for(isa).f32_to_f16(src, dst, n);
}
void convert_bf16_to_f32(const uint16_t* src, float* dst, int64_t n, Isa isa) {
  kernels_for(isa).bf16_to_f32(src, dst, n);
}
void convert_f32_to_bf16(const float* src, uint16_t* dst, int64_t n, Isa isa) {
  kernels_for(isa).f32_to_bf16(src, dst, n);
}

void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  convert_f16_to_f32(src, dst, n, detected_isa());
}
void convert_f32_to_f16(const float* src, uint16_t* dst, int64_t n) {
  convert_f32_to_f16(src, dst, n, detected_isa());
}
void convert_bf16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  convert_bf16_to_f32(src, dst, n, detected_isa());
}
void convert_f32_to_bf16(const float* src, uint16_t* dst, int64_t n) {
  convert_f32_to_bf16(src, dst, n, detected_isa());
}

}  // namespace lemma::kernels
