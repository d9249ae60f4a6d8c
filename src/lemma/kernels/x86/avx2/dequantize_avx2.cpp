// Block decoders (GGUF -> f32) with AVX2, bit-identical to reference/dequantize.cpp (same float
// operations in the same order, never fused; F16C is exact for every non-NaN f16 scale).
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

// 8 bytes -> 8 int32 lanes (zero-extended).
__m256i bytes8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }

__m256 to_float(__m256i v) { return _mm256_cvtepi32_ps(v); }

void scale_min(int s, const uint8_t* q, int* scale, int* min) {
  if (s < 4) {
    *scale = q[s] & 63;
    *min = q[s + 4] & 63;
  } else {
    *scale = (q[s + 4] & 0x0F) | ((q[s - 4] >> 6) << 4);
    *min = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
  }
}

// 16 where (h & bit) != 0, else 0.
__m256i bit_to_16(__m256i h, __m256i bit) {
  const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(h, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi32(16));
}

template <bool kHasHighBit>
void decode_k4(const void* src, float* dst, int64_t n) {
  constexpr int kBlockBytes = kHasHighBit ? 176 : 144;
  const auto* block = static_cast<const uint8_t*>(src);
  const __m256i low4 = _mm256_set1_epi32(0x0F);
  for (int64_t b = 0; b < n / 256; ++b, block += kBlockBytes) {
    const float d = half(block), dmin = half(block + 2);
    const uint8_t* scales = block + 4;
    const uint8_t* qh = block + 16;
    const uint8_t* ql = block + (kHasHighBit ? 48 : 16);
    for (int group = 0; group < 4; ++group, ql += 32, dst += 64) {
      int sc, m;
      scale_min(2 * group, scales, &sc, &m);
      const __m256 d1 = _mm256_set1_ps(d * static_cast<float>(sc)), m1 = _mm256_set1_ps(dmin * static_cast<float>(m));
      scale_min(2 * group + 1, scales, &sc, &m);
      const __m256 d2 = _mm256_set1_ps(d * static_cast<float>(sc)), m2 = _mm256_set1_ps(dmin * static_cast<float>(m));
      const __m256i bit_lo = _mm256_set1_epi32(1 << (2 * group)), bit_hi = _mm256_set1_epi32(2 << (2 * group));
      for (int l = 0; l < 32; l += 8) {
        const __m256i q = bytes8(ql + l);
        __m256i lo = _mm256_and_si256(q, low4);
        __m256i hi = _mm256_srli_epi32(q, 4);
        if constexpr (kHasHighBit) {
          const __m256i h = bytes8(qh + l);
          lo = _mm256_add_epi32(lo, bit_to_16(h, bit_lo));
          hi = _mm256_add_epi32(hi, bit_to_16(h, bit_hi));
        }
        _mm256_storeu_ps(dst + l, _mm256_sub_ps(_mm256_mul_ps(d1, to_float(lo)), m1));
        _mm256_storeu_ps(dst + 32 + l, _mm256_sub_ps(_mm256_mul_ps(d2, to_float(hi)), m2));
      }
    }
  }
}

}  // namespace

void decode_q8_0_avx2(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < n / 32; ++b, block += 34, dst += 32) {
    const __m256 d = _mm256_set1_ps(half(block));
    for (int i = 0; i < 32; i += 8) {
      const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + i)));
      _mm256_storeu_ps(dst + i, _mm256_mul_ps(to_float(q), d));
    }
  }
}

void decode_q4_0_avx2(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  const __m256i low4 = _mm256_set1_epi32(0x0F), eight = _mm256_set1_epi32(8);
  for (int64_t b = 0; b < n / 32; ++b, block += 18, dst += 32) {
    const __m256 d = _mm256_set1_ps(half(block));
    for (int i = 0; i < 16; i += 8) {
      const __m256i q = bytes8(block + 2 + i);
      const __m256i lo = _mm256_sub_epi32(_mm256_and_si256(q, low4), eight);
      const __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(q, 4), eight);
      _mm256_storeu_ps(dst + i, _mm256_mul_ps(to_float(lo), d));
      _mm256_storeu_ps(dst + 16 + i, _mm256_mul_ps(to_float(hi), d));
    }
  }
}

void decode_q4_k_avx2(const void* src, float* dst, int64_t n) { decode_k4<false>(src, dst, n); }
void decode_q5_k_avx2(const void* src, float* dst, int64_t n) { decode_k4<true>(src, dst, n); }

void decode_q6_k_avx2(const void* src, float* dst, int64_t n) {
  const auto* block = static_cast<const uint8_t*>(src);
  const __m256i low4 = _mm256_set1_epi32(0x0F), three = _mm256_set1_epi32(3), bias = _mm256_set1_epi32(32);
  for (int64_t b = 0; b < n / 256; ++b, block += 210) {
    const float d = half(block + 208);
    const uint8_t* ql = block;
    const uint8_t* qh = block + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(block + 192);
    for (int part = 0; part < 2; ++part, dst += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; l += 8) {
        const int s = l / 16;
        const __m256i a = bytes8(ql + l), c = bytes8(ql + l + 32), h = bytes8(qh + l);
        const __m256i q1 = _mm256_sub_epi32(
            _mm256_or_si256(_mm256_and_si256(a, low4), _mm256_slli_epi32(_mm256_and_si256(h, three), 4)), bias);
        const __m256i q2 = _mm256_sub_epi32(
            _mm256_or_si256(_mm256_and_si256(c, low4),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), three), 4)), bias);
        const __m256i q3 = _mm256_sub_epi32(
            _mm256_or_si256(_mm256_srli_epi32(a, 4),
                            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), three), 4)), bias);
        const __m256i q4 = _mm256_sub_epi32(
            _mm256_or_si256(_mm256_srli_epi32(c, 4), _mm256_slli_epi32(_mm256_srli_epi32(h, 6), 4)), bias);
        _mm256_storeu_ps(dst + l, _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[s])), to_float(q1)));
        _mm256_storeu_ps(dst + l + 32, _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[s + 2])), to_float(q2)));
        _mm256_storeu_ps(dst + l + 64, _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[s + 4])), to_float(q3)));
        _mm256_storeu_ps(dst + l + 96, _mm256_mul_ps(_mm256_set1_ps(d * static_cast<float>(sc[s + 6])), to_float(q4)));
      }
    }
  }
}

}  // namespace lemma::kernels::x86
