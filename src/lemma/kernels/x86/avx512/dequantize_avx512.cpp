// Block decoders (GGUF -> f32) with AVX-512, bit-identical to reference/dequantize.cpp: the same
// float operations in the same order (int -> float conversions are exact; mul and sub are separate
// instructions, never fused). Scales go through F16C, which is exact for every non-NaN f16.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/x86/x86_kernels.h"

namespace lemma::kernels::x86 {

namespace {

float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// 16 bytes -> 16 int32 lanes (zero-extended).
__m512i bytes16(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

__m512 to_float(__m512i v) { return _mm512_cvtepi32_ps(v); }

void scale_min(int s, const uint8_t* q, int* scale, int* min) {
  if (s < 4) {
    *scale = q[s] & 63;
    *min = q[s + 4] & 63;
  } else {
    *scale = (q[s + 4] & 0x0F) | ((q[s - 4] >> 6) << 4);
    *min = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
  }
}

}  // namespace

void decode_q8_0_avx512(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < n / 32; ++b, block += 34, dst += 32) {
    const __m512 d = _mm512_set1_ps(half(block));
    for (int i = 0; i < 32; i += 16) {
      const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + i)));
      _mm512_storeu_ps(dst + i, _mm512_mul_ps(to_float(q), d));
    }
  }
}

void decode_q4_0_avx512(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  const __m512i low4 = _mm512_set1_epi32(0x0F), eight = _mm512_set1_epi32(8);
  for (int64_t b = 0; b < n / 32; ++b, block += 18, dst += 32) {
    const __m512 d = _mm512_set1_ps(half(block));
    const __m512i q = bytes16(block + 2);
    const __m512i lo = _mm512_sub_epi32(_mm512_and_si512(q, low4), eight);
    const __m512i hi = _mm512_sub_epi32(_mm512_srli_epi32(q, 4), eight);
    _mm512_storeu_ps(dst, _mm512_mul_ps(to_float(lo), d));
    _mm512_storeu_ps(dst + 16, _mm512_mul_ps(to_float(hi), d));
  }
}

namespace {

// Q4_K (144-byte blocks) and Q5_K (176-byte blocks, with qh) share the scale layout.
template <bool kHasHighBit>
void decode_k4(const void* src, float* dst, int64_t n) {
  constexpr int kBlockBytes = kHasHighBit ? 176 : 144;
  const auto* block = static_cast<const uint8_t*>(src);
  const __m512i low4 = _mm512_set1_epi32(0x0F), sixteen = _mm512_set1_epi32(16);
  for (int64_t b = 0; b < n / 256; ++b, block += kBlockBytes) {
    const float d = half(block), dmin = half(block + 2);
    const uint8_t* scales = block + 4;
    const uint8_t* qh = block + 16;
    const uint8_t* ql = block + (kHasHighBit ? 48 : 16);
    for (int group = 0; group < 4; ++group, ql += 32) {
      int sc, m;
      scale_min(2 * group, scales, &sc, &m);
      const __m512 d1 = _mm512_set1_ps(d * static_cast<float>(sc)), m1 = _mm512_set1_ps(dmin * static_cast<float>(m));
      scale_min(2 * group + 1, scales, &sc, &m);
      const __m512 d2 = _mm512_set1_ps(d * static_cast<float>(sc)), m2 = _mm512_set1_ps(dmin * static_cast<float>(m));
      for (int l = 0; l < 32; l += 16) {
        const __m512i q = bytes16(ql + l);
        __m512i lo = _mm512_and_si512(q, low4);
        __m512i hi = _mm512_srli_epi32(q, 4);
        if constexpr (kHasHighBit) {
          const __m512i h = bytes16(qh + l);
          const __m512i bit_lo = _mm512_set1_epi32(1 << (2 * group)), bit_hi = _mm512_set1_epi32(2 << (2 * group));
          lo = _mm512_add_epi32(lo, _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(h, bit_lo), sixteen));
          hi = _mm512_add_epi32(hi, _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(h, bit_hi), sixteen));
        }
        _mm512_storeu_ps(dst + l, _mm512_sub_ps(_mm512_mul_ps(d1, to_float(lo)), m1));
        _mm512_storeu_ps(dst + 32 + l, _mm512_sub_ps(_mm512_mul_ps(d2, to_float(hi)), m2));
      }
      dst += 64;
    }
  }
}

}  // namespace

void decode_q6_k_avx512(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  const __m512i low4 = _mm512_set1_epi32(0x0F), three = _mm512_set1_epi32(3), bias = _mm512_set1_epi32(32);
  for (int64_t b = 0; b < n / 256; ++b, block += 210) {
    const float d = half(block + 208);
    const uint8_t* ql = block;
    const uint8_t* qh = block + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(block + 192);
    for (int part = 0; part < 2; ++part, dst += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; l += 16) {
        const int s = l / 16;
        const __m512i a = bytes16(ql + l), c = bytes16(ql + l + 32), h = bytes16(qh + l);
        const __m512i q1 = _mm512_sub_epi32(
            _mm512_or_si512(_mm512_and_si512(a, low4), _mm512_slli_epi32(_mm512_and_si512(h, three), 4)), bias);
        const __m512i q2 = _mm512_sub_epi32(
            _mm512_or_si512(_mm512_and_si512(c, low4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 2), three), 4)), bias);
        const __m512i q3 = _mm512_sub_epi32(
            _mm512_or_si512(_mm512_srli_epi32(a, 4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 4), three), 4)), bias);
        const __m512i q4 = _mm512_sub_epi32(
            _mm512_or_si512(_mm512_srli_epi32(c, 4), _mm512_slli_epi32(_mm512_srli_epi32(h, 6), 4)), bias);
        _mm512_storeu_ps(dst + l, _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[s])), to_float(q1)));
        _mm512_storeu_ps(dst + l + 32, _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[s + 2])), to_float(q2)));
        _mm512_storeu_ps(dst + l + 64, _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[s + 4])), to_float(q3)));
        _mm512_storeu_ps(dst + l + 96, _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(sc[s + 6])), to_float(q4)));
      }
    }
  }
}

void decode_q4_k_avx512(const void* src, float* dst, int64_t n) { decode_k4<false>(src, dst, n); }
void decode_q5_k_avx512(const void* src, float* dst, int64_t n) { decode_k4<true>(src, dst, n); }

}  // namespace lemma::kernels::x86
