// Block decoders (GGUF -> f32) over the vector layer, once per ISA, bit-identical to
// reference/dequantize.cpp: the same float operations in the same order (int -> float conversions
// are exact; mul and sub are separate instructions, never fused). Scales go through F16C, which is
// exact for every non-NaN f16. Every loop takes Vec::kWidth codes at a time (W <= 16 divides them).
#include <cstring>

#include "lemma/kernels/x86/vec/vec.h"

namespace lemma::kernels::x86 {

namespace {

using F = Vec::F;
using I = Vec::I;
constexpr int W = Vec::kWidth;

float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

void scale_min(int s, const uint8_t* q, int* scale, int* min) {
  if (s < 4) {
    *scale = q[s] & 63;
    *min = q[s + 4] & 63;
  } else {
    *scale = (q[s + 4] & 0x0F) | ((q[s - 4] >> 6) << 4);
    *min = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
  }
}

// Q4_K (144-byte blocks) and Q5_K (176-byte blocks, with qh) share the scale layout.
template <bool kHasHighBit>
void decode_k4(const void* src, float* dst, int64_t n) {
  constexpr int kBlockBytes = kHasHighBit ? 176 : 144;
  const auto* block = static_cast<const uint8_t*>(src);
  const I low4 = Vec::set1_i32(0x0F), sixteen = Vec::set1_i32(16);
  for (int64_t b = 0; b < n / 256; ++b, block += kBlockBytes) {
    const float d = half(block), dmin = half(block + 2);
    const uint8_t* scales = block + 4;
    const uint8_t* qh = block + 16;
    const uint8_t* ql = block + (kHasHighBit ? 48 : 16);
    for (int group = 0; group < 4; ++group, ql += 32, dst += 64) {
      int sc, m;
      scale_min(2 * group, scales, &sc, &m);
      const F d1 = Vec::set1(d * static_cast<float>(sc)), m1 = Vec::set1(dmin * static_cast<float>(m));
      scale_min(2 * group + 1, scales, &sc, &m);
      const F d2 = Vec::set1(d * static_cast<float>(sc)), m2 = Vec::set1(dmin * static_cast<float>(m));
      const I bit_lo = Vec::set1_i32(1 << (2 * group)), bit_hi = Vec::set1_i32(2 << (2 * group));
      for (int l = 0; l < 32; l += W) {
        const I q = Vec::load_u8_i32(ql + l);
        I lo = Vec::and_i32(q, low4);
        I hi = Vec::shift_right_i32<4>(q);
        if constexpr (kHasHighBit) {
          const I h = Vec::load_u8_i32(qh + l);
          lo = Vec::add_i32(lo, Vec::where_bit(h, bit_lo, sixteen));
          hi = Vec::add_i32(hi, Vec::where_bit(h, bit_hi, sixteen));
        }
        Vec::store(dst + l, Vec::sub(Vec::mul(d1, Vec::to_float(lo)), m1));
        Vec::store(dst + 32 + l, Vec::sub(Vec::mul(d2, Vec::to_float(hi)), m2));
      }
    }
  }
}

}  // namespace

void simd::decode_q8_0(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < n / 32; ++b, block += 34, dst += 32) {
    const F d = Vec::set1(half(block));
    for (int i = 0; i < 32; i += W) Vec::store(dst + i, Vec::mul(Vec::to_float(Vec::load_i8_i32(block + 2 + i)), d));
  }
}

void simd::decode_q4_0(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  const I low4 = Vec::set1_i32(0x0F), eight = Vec::set1_i32(8);
  for (int64_t b = 0; b < n / 32; ++b, block += 18, dst += 32) {
    const F d = Vec::set1(half(block));
    for (int i = 0; i < 16; i += W) {
      const I q = Vec::load_u8_i32(block + 2 + i);
      const I lo = Vec::sub_i32(Vec::and_i32(q, low4), eight);
      const I hi = Vec::sub_i32(Vec::shift_right_i32<4>(q), eight);
      Vec::store(dst + i, Vec::mul(Vec::to_float(lo), d));
      Vec::store(dst + 16 + i, Vec::mul(Vec::to_float(hi), d));
    }
  }
}

void simd::decode_q4_k(const void* src, float* dst, int64_t n) { decode_k4<false>(src, dst, n); }
void simd::decode_q5_k(const void* src, float* dst, int64_t n) { decode_k4<true>(src, dst, n); }

void simd::decode_q6_k(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  const I low4 = Vec::set1_i32(0x0F), three = Vec::set1_i32(3), bias = Vec::set1_i32(32);
  for (int64_t b = 0; b < n / 256; ++b, block += 210) {
    const float d = half(block + 208);
    const uint8_t* ql = block;
    const uint8_t* qh = block + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(block + 192);
    for (int part = 0; part < 2; ++part, dst += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; l += W) {
        const int s = l / 16;
        const I a = Vec::load_u8_i32(ql + l), c = Vec::load_u8_i32(ql + l + 32), h = Vec::load_u8_i32(qh + l);
        const auto high = [&]<int N>() { return Vec::shift_left_i32<4>(Vec::and_i32(Vec::shift_right_i32<N>(h), three)); };
        const I q1 = Vec::sub_i32(Vec::or_i32(Vec::and_i32(a, low4), high.template operator()<0>()), bias);
        const I q2 = Vec::sub_i32(Vec::or_i32(Vec::and_i32(c, low4), high.template operator()<2>()), bias);
        const I q3 = Vec::sub_i32(Vec::or_i32(Vec::shift_right_i32<4>(a), high.template operator()<4>()), bias);
        const I q4 = Vec::sub_i32(Vec::or_i32(Vec::shift_right_i32<4>(c), Vec::shift_left_i32<4>(Vec::shift_right_i32<6>(h))), bias);
        Vec::store(dst + l, Vec::mul(Vec::set1(d * static_cast<float>(sc[s])), Vec::to_float(q1)));
        Vec::store(dst + l + 32, Vec::mul(Vec::set1(d * static_cast<float>(sc[s + 2])), Vec::to_float(q2)));
        Vec::store(dst + l + 64, Vec::mul(Vec::set1(d * static_cast<float>(sc[s + 4])), Vec::to_float(q3)));
        Vec::store(dst + l + 96, Vec::mul(Vec::set1(d * static_cast<float>(sc[s + 6])), Vec::to_float(q4)));
      }
    }
  }
}

}  // namespace lemma::kernels::x86
