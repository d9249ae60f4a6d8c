// f16/bf16 <-> f32 rows (see convert.h) over the vector layer, once per ISA: whole vectors, then
// one partial vector through Vec's tail loads and stores. f16 by the hardware conversions (F16C,
// round to nearest even), bf16 by integer rounding that keeps subnormals (Vec::f32_to_bf16).
#include "lemma/kernels/x86/vec/vec.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t W = Vec::kWidth;

// dst[i] = widen(16-bit src[i]) for i < n.
template <auto widen>
void widen_row(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Vec::store(dst + i, widen(Vec::load_h(src + i)));
  if (i < n) Vec::store_first(dst + i, widen(Vec::load_h_first(src + i, n - i)), n - i);
}

// dst[i] = narrow(src[i]) to 16 bits for i < n.
template <auto narrow>
void narrow_row(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) Vec::store_h(dst + i, narrow(Vec::load(src + i)));
  if (i < n) Vec::store_h_first(dst + i, narrow(Vec::load_first(src + i, n - i)), n - i);
}

}  // namespace

void simd::convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n) { widen_row<Vec::f16_to_f32>(src, dst, n); }
void simd::convert_f32_to_f16(const float* src, uint16_t* dst, int64_t n) { narrow_row<Vec::f32_to_f16>(src, dst, n); }
void simd::convert_bf16_to_f32(const uint16_t* src, float* dst, int64_t n) { widen_row<Vec::bf16_to_f32>(src, dst, n); }
void simd::convert_f32_to_bf16(const float* src, uint16_t* dst, int64_t n) { narrow_row<Vec::f32_to_bf16>(src, dst, n); }

}  // namespace lemma::kernels::x86
