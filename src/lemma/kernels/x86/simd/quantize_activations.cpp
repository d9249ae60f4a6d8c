// The activation quantisers over the vector layer, once per ISA, each the bytes of its reference
// (reference/int8_activations.cpp, q8k_activations.cpp, lemma_int.cpp): the max ignores NaN (|x| is
// vmaxps's first operand), NaN products become 0 before the f32 clamp, vcvtps2dq rounds half to
// even, and integer code sums are exact in any order.
#include <cstring>
#include <limits>

#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/vec/vec.h"

namespace lemma::kernels::x86 {

namespace {

using F = Vec::F;
using I = Vec::I;
constexpr int W = Vec::kWidth;
constexpr int kBlock = static_cast<int>(kInt8ActivationBlock);  // 32 values: kBlock / W vectors

// Codes of v * id as int32: NaN -> 0, clamped to [-127, 127] in f32, rounded half to even.
I codes(F v, F id) {
  F s = Vec::mul(v, id);
  s = Vec::zero_unless(Vec::is_ordered(s), s);
  return Vec::to_int(Vec::min(Vec::max(s, Vec::set1(-127.0f)), Vec::set1(127.0f)));
}

// The scale entry of a block: f32(f16(amax / 127)), NaN when the block holds a NaN.
float f16_scale(float amax, bool has_nan) {
  return has_nan ? std::numeric_limits<float>::quiet_NaN() : _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
}

// Both int8 forms in one pass: codes + 128 (Signed = false), or the signed codes q and each block's
// code sum (what make_int8_activations_signed() makes of the first, without a second pass).
template <bool Signed>
void quantize_int8(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t blocks = K / kBlock;
  auto* base = static_cast<uint8_t*>(out);
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    uint8_t* codes_out = base + m * (Signed ? int8_signed_row_bytes(K) : int8_row_bytes(K));
    auto* scales = reinterpret_cast<float*>(codes_out + int8_codes_stride(K));
    int32_t* sums = Signed ? reinterpret_cast<int32_t*>(scales + int8_scales_stride(K)) : nullptr;
    for (int64_t b = 0; b < blocks; ++b) {
      F v[kBlock / W];
      F vmax = Vec::zero();
      Vec::Mask nan = Vec::no_lanes();
      for (int i = 0; i < kBlock / W; ++i) {
        v[i] = Vec::load(row + b * kBlock + W * i);
        vmax = Vec::max(Vec::abs(v[i]), vmax);
        nan = Vec::mask_or(nan, Vec::is_nan(v[i]));
      }
      const float amax = Vec::reduce_max(vmax);
      const F id = Vec::set1(amax != 0.0f ? 127.0f / amax : 0.0f);
      I q[kBlock / W];
      for (int i = 0; i < kBlock / W; ++i) q[i] = codes(v[i], id);
      if constexpr (Signed) {
        I sum = q[0];
        for (int i = 1; i < kBlock / W; ++i) sum = Vec::add_i32(sum, q[i]);
        sums[b] = Vec::reduce_add_i32(sum);
        Vec::store_i8x32(reinterpret_cast<int8_t*>(codes_out + b * kBlock), q);
      } else {
        for (I& c : q) c = Vec::add_i32(c, Vec::set1_i32(128));
        Vec::store_u8x32(codes_out + b * kBlock, q);
      }
      scales[b] = f16_scale(amax, Vec::any(nan));
    }
    std::memset(codes_out + K, Signed ? 0 : 128, static_cast<size_t>(int8_codes_stride(K) - K));
    for (int64_t b = blocks; b < int8_scales_stride(K); ++b) {
      scales[b] = 0.0f;
      if constexpr (Signed) sums[b] = 0;
    }
  }
}

}  // namespace

void simd::quantize_activations(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  quantize_int8<false>(x, x_stride, M, K, out);
}

// The signed form the interleaved kernels read (interleaved_blocks.h).
void simd::quantize_signed_activations(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  quantize_int8<true>(x, x_stride, M, K, out);
}

// The W8A8 rule (lemma_int_blocks.h: one amax per row, codes clamped as ints) into the signed layout.
void simd::quantize_w8a8_signed_activations(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t blocks = K / kBlock;
  const I lo = Vec::set1_i32(-127), hi = Vec::set1_i32(127);
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    F vmax = Vec::zero();
    // max(|x|, vmax) keeps vmax where |x| is NaN, as std::max(amax, |x|) does in the reference.
    for (int64_t k = 0; k < blocks * kBlock; k += W) vmax = Vec::max(Vec::abs(Vec::load(row + k)), vmax);
    const float amax = Vec::reduce_max(vmax);
    const F id = Vec::set1(amax > 0.0f ? 127.0f / amax : 0.0f);
    auto* codes_out = const_cast<int8_t*>(int8_signed_codes(out, K, m));
    auto* sums = const_cast<int32_t*>(int8_block_sums(out, K, m));
    for (int64_t b = 0; b < blocks; ++b) {
      I q[kBlock / W];
      I sum = Vec::zero_i32();
      for (int i = 0; i < kBlock / W; ++i) {
        // x * id rounded half to even (MXCSR's default), as std::nearbyint in the reference.
        q[i] = Vec::min_i32(Vec::max_i32(Vec::to_int(Vec::mul(Vec::load(row + b * kBlock + W * i), id)), lo), hi);
        sum = Vec::add_i32(sum, q[i]);
      }
      Vec::store_i8x32(codes_out + b * kBlock, q);
      sums[b] = Vec::reduce_add_i32(sum);
    }
    finish_w8a8_signed_row(out, K, m, amax);
  }
}

// Q8_K-style blocks: 256 values, one f32 scale 1 / id and a code sum per 16 values.
void simd::quantize_q8k_activations(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  constexpr int kQ8k = static_cast<int>(kQ8KBlock);
  const int64_t blocks = K / kQ8k;
  for (int64_t m = 0; m < M; ++m) {
    const float* row = x + m * x_stride;
    auto* codes_out = static_cast<int8_t*>(out) + m * q8k_row_bytes(K);
    auto* scales = const_cast<float*>(q8k_scales(out, K, m));
    auto* sums = const_cast<int16_t*>(q8k_sums(out, K, m));
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = row + b * kQ8k;
      F vmax = Vec::zero();
      Vec::Mask nan = Vec::no_lanes();
      for (int i = 0; i < kQ8k; i += W) {
        const F v = Vec::load(xb + i);
        vmax = Vec::max(Vec::abs(v), vmax);
        nan = Vec::mask_or(nan, Vec::is_nan(v));
      }
      const float amax = Vec::reduce_max(vmax);
      const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
      const F vid = Vec::set1(id);
      for (int i = 0; i < kQ8k; i += kBlock) {  // 32 values: two code sums
        I q[kBlock / W];
        for (int j = 0; j < kBlock / W; ++j) q[j] = codes(Vec::load(xb + i + W * j), vid);
        Vec::store_i8x32(codes_out + b * kQ8k + i, q);
        for (int g = 0; g < 2; ++g) {
          constexpr int kPerGroup = static_cast<int>(kQ8KGroup) / W;
          I sum = q[kPerGroup * g];
          for (int j = 1; j < kPerGroup; ++j) sum = Vec::add_i32(sum, q[kPerGroup * g + j]);
          sums[b * 16 + i / 16 + g] = static_cast<int16_t>(Vec::reduce_add_i32(sum));
        }
      }
      scales[b] = Vec::any(nan) ? std::numeric_limits<float>::quiet_NaN() : amax != 0.0f ? 1.0f / id : 0.0f;
    }
    std::memset(codes_out + K, 0, static_cast<size_t>(q8k_codes_stride(K) - K));
    for (int64_t b = blocks; b < q8k_scales_stride(K); ++b) scales[b] = 0.0f;
    for (int64_t g = K / kQ8KGroup; g < q8k_sums_stride(K); ++g) sums[g] = 0;
  }
}

}  // namespace lemma::kernels::x86
