// The AVX512_BF16 part of the flash split kernel (x86/simd/flash_attention.cpp, compiled a third time
// with -mavx512bf16): a bf16 cache's q . k by vdpbf16ps instead of widening every key to f32.
// Included only there; everything is in an anonymous namespace (see x86/vec/vec_avx512.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "lemma/kernels/x86/flash_chunks.h"
#include "lemma/kernels/x86/vec/vec_avx512.h"

namespace lemma::kernels::x86 {
namespace {

struct Bf16Dots {
  static constexpr bool kEnabled = true;
  // q's two bf16 halves sit on the stack; longer heads widen their keys as the other dtypes do.
  static constexpr int64_t kMaxHeadDim = 512;

  // q = hi + lo with hi = bf16(q) and lo = bf16(q - hi) (round to nearest even), zero-padded to a
  // multiple of 32: hi . k + lo . k carries 16 of q's 24 mantissa bits (relative error below 2^-16),
  // while every product of two bf16 values is exact in f32.
  static void split_query(const float* q, int64_t hd, uint16_t* hi, uint16_t* lo) {
    for (int64_t d = 0; d < hd; d += 32) {
      const __m512 x0 = _mm512_maskz_loadu_ps(VecAvx512::tail_mask(hd - d), q + d);
      const __m512 x1 = _mm512_maskz_loadu_ps(VecAvx512::tail_mask(max64(hd - d - 16, 0)), q + d + 16);
      const __m512i h = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
      const __m512 h0 = VecAvx512::bf16_to_f32(_mm512_castsi512_si256(h));
      const __m512 h1 = VecAvx512::bf16_to_f32(_mm512_extracti64x4_epi64(h, 1));
      _mm512_store_si512(hi + d, h);
      _mm512_store_si512(lo + d, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0))));
    }
  }

  // q . k[i] for the 16 bf16 key rows of a tile from q's halves (split_query): two vdpbf16ps per 32
  // elements in place of two loads, four widening steps and two FMAs.
  template <bool kFull>
  [[gnu::always_inline]] static __m512 tile_dots(const uint16_t* q_hi, const uint16_t* q_lo, const char* const* k, int64_t hd) {
    __m512 acc[kTile];
    for (auto& x : acc) x = _mm512_setzero_ps();
    for (int64_t d = 0; d < hd; d += 32) {
      const __mmask32 m = hd - d >= 32 ? ~__mmask32{0} : (__mmask32{1} << (hd - d)) - 1;
      const __m512bh qh = reinterpret_cast<__m512bh>(_mm512_load_si512(q_hi + d));
      const __m512bh ql = reinterpret_cast<__m512bh>(_mm512_load_si512(q_lo + d));
      for (int64_t i = 0; i < kTile; ++i) {
        const uint16_t* x = reinterpret_cast<const uint16_t*>(k[i]) + d;
        const __m512bh kv = reinterpret_cast<__m512bh>(kFull ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi16(m, x));
        acc[i] = _mm512_dpbf16_ps(acc[i], kv, ql);
        acc[i] = _mm512_dpbf16_ps(acc[i], kv, qh);
      }
    }
    return VecAvx512::reduce_add_each(acc);
  }
};

}  // namespace
}  // namespace lemma::kernels::x86
