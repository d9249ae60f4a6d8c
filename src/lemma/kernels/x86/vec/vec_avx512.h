// The width-generic vector layer on AVX-512 (F/BW/VL/DQ): VecAvx512, 16 f32 lanes in a zmm register,
// the same members as VecAvx2 (vec_avx2.h). Every member is a thin inline wrapper over the
// intrinsics the AVX-512 kernels always used, so a kernel written once over Vec (x86/simd/) compiles
// here to the same instruction sequences. Tails are masked loads and stores (opmask registers).
// Included only by sources compiled with AVX-512 flags; everything is in an anonymous namespace,
// so no object exports an ISA-flagged copy the linker could pick for other callers.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/x86/horizontal_sum.h"

namespace lemma::kernels::x86 {
namespace {

struct VecAvx512 {
  static constexpr int kWidth = 16;      // f32 lanes
  static constexpr int kRegisters = 32;  // vector registers
  using F = __m512;   // f32 lanes
  using I = __m512i;  // int32 lanes (or 64 bytes)
  using D = __m512d;  // half the lanes widened to f64
  using Mask = __mmask16;  // bit i: lane i

  // Lanes [0, min(count, 16)) set; count >= 0.
  static __mmask16 tail_mask(int64_t count) {
    return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1u);
  }

  // --- f32 lanes
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F load_aligned(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void store_aligned(float* p, F v) { _mm512_store_ps(p, v); }
  // p[0, min(count, 16)), the other lanes 0 (or `fill`); count >= 0. Only those entries are read.
  static F load_first(const float* p, int64_t count) { return _mm512_maskz_loadu_ps(tail_mask(count), p); }
  static F load_first(const float* p, int64_t count, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), tail_mask(count), p);
  }
  // Writes lanes [0, min(count, 16)) to p; count >= 0.
  static void store_first(float* p, F v, int64_t count) { _mm512_mask_storeu_ps(p, tail_mask(count), v); }
  // Lanes of m from p (masked lanes are 0 and never read) / to p; m from first_lanes_mask.
  static F load_masked(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store_masked(float* p, F v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  // min/max return their second operand when either is NaN.
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }   // a * b + c, one rounding
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a * b, one rounding
  static F abs(F v) { return _mm512_and_ps(v, _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF))); }
  // Lane i + lane i + 8, then as VecAvx2::reduce_add (horizontal_sum.h).
  static float reduce_add(F v) { return reduce16(v); }
  static float reduce_max(F v) { return _mm512_reduce_max_ps(v); }  // keep NaN out of v
  static float reduce_max_in_order(F v) { return _mm512_reduce_max_ps(v); }  // the row ops' (same tree)

  // exp: Cephes-style range reduction and degree-6 polynomial, scaled with vscalefps (correct
  // overflow, underflow and subnormals; -inf -> 0); NaN stays NaN.
  static F exp(F x) {
    // Clamp so the reduction stays exact; min/max return their second operand for NaN, keeping it.
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
  }

  // --- int32 lanes
  static I zero_i32() { return _mm512_setzero_si512(); }
  static I set1_i32(int32_t v) { return _mm512_set1_epi32(v); }
  static I add_i32(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub_i32(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I min_i32(I a, I b) { return _mm512_min_epi32(a, b); }
  static I max_i32(I a, I b) { return _mm512_max_epi32(a, b); }
  static I load_i(const void* p) { return _mm512_loadu_si512(p); }
  static I load_i_aligned(const void* p) { return _mm512_load_si512(p); }  // p 64-byte aligned
  static I set1_i8(char v) { return _mm512_set1_epi8(v); }
  static I sub_i16(I a, I b) { return _mm512_sub_epi16(a, b); }
  // Unsigned bytes u times signed bytes x, adjacent products summed to int16 (saturating).
  static I pair_sums_u8i8(I u, I x) { return _mm512_maddubs_epi16(u, x); }
  static I and_i32(I a, I b) { return _mm512_and_si512(a, b); }
  static I or_i32(I a, I b) { return _mm512_or_si512(a, b); }
  template <int N>
  static I shift_right_i32(I v) { return _mm512_srli_epi32(v, N); }  // logical
  template <int N>
  static I shift_left_i32(I v) { return _mm512_slli_epi32(v, N); }
  // `value` in the lanes where h & bit is set (bit: a single bit), else 0.
  static I where_bit(I h, I bit, I value) { return _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(h, bit), value); }
  // 16 bytes at p as int32 lanes, zero- or sign-extended.
  static I load_u8_i32(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I load_i8_i32(const uint8_t* p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I to_int(F v) { return _mm512_cvtps_epi32(v); }  // rounds half to even (MXCSR's default)
  static F to_float(I v) { return _mm512_cvtepi32_ps(v); }
  static int32_t reduce_add_i32(I v) { return _mm512_reduce_add_epi32(v); }
  // 32 int32 values (q[0..1], lanes in order) as 32 bytes at out: int8 (-128..127) or uint8 (0..255).
  static void store_i8x32(int8_t* out, const I* q) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(q[0]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_cvtepi32_epi8(q[1]));
  }
  static void store_u8x32(uint8_t* out, const I* q) { store_i8x32(reinterpret_cast<int8_t*>(out), q); }

  // Byte J (0..3) of each 32-bit lane, sign-extended.
  template <int J>
  static I signed_byte(I v) { return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * J), 24); }

  // Lane i: the sum of a[i]'s 16 lanes (a[0..15]), each in a fixed order that never mixes in the
  // other vectors (so a lane's sum does not depend on them).
  static F reduce_add_each(const F* a) {
    __m512 pairs[8], quads[4];
    for (int i = 0; i < 8; ++i)  // [a0_0+a0_2, a1_0+a1_2, a0_1+a0_3, a1_1+a1_3] per 128-bit lane
      pairs[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; ++i) {  // per 128-bit lane: partial sums of a[4i .. 4i+3]
      const __m512d x = _mm512_castps_pd(pairs[2 * i]), y = _mm512_castps_pd(pairs[2 * i + 1]);
      quads[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    const __m512 h01 = _mm512_add_ps(_mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_f32x4(quads[0], quads[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 h23 = _mm512_add_ps(_mm512_shuffle_f32x4(quads[2], quads[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_f32x4(quads[2], quads[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(h01, h23, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_f32x4(h01, h23, _MM_SHUFFLE(3, 1, 3, 1)));
  }

  // --- lane masks
  static Mask first_lanes_mask(int64_t count) { return tail_mask(count); }  // count >= 0
  static Mask no_lanes() { return 0; }
  static Mask is_nan(F v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q); }
  static Mask is_ordered(F v) { return _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q); }
  static Mask eq(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static Mask gt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static Mask ge(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  static Mask mask_or(Mask a, Mask b) { return a | b; }
  static Mask mask_and(Mask a, Mask b) { return a & b; }
  static bool any(Mask m) { return m != 0; }
  static unsigned bits(Mask m) { return m; }
  static unsigned first_lanes(int64_t count) { return tail_mask(count); }
  static F select(Mask m, F if_set, F if_clear) { return _mm512_mask_mov_ps(if_clear, m, if_set); }
  static F zero_unless(Mask m, F v) { return _mm512_maskz_mov_ps(m, v); }
  // Writes base + i for each set bit i of `lanes`, ascending, to out; returns how many. Compresses in
  // a register, then one masked store (a compress straight to memory is slow on some cores).
  static int store_lane_indices(int32_t* out, unsigned lanes, int32_t base) {
    if (lanes == 0) return 0;
    const int count = __builtin_popcount(lanes);
    const __m512i index = _mm512_add_epi32(_mm512_set1_epi32(base), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    _mm512_mask_storeu_epi32(out, static_cast<__mmask16>((1u << count) - 1u), _mm512_maskz_compress_epi32(static_cast<__mmask16>(lanes), index));
    return count;
  }

  // A little-endian 64-bit mask stored at p (one bit per byte lane of a zmm).
  static __mmask64 load_mask64(const uint8_t* p) {
    uint64_t m;
    std::memcpy(&m, p, 8);
    return _cvtu64_mask64(m);
  }

  // --- f64 sums of f32 lanes: lanes 0-7 into lo, 8-15 into hi
  static constexpr int kDoubles = 8;  // f64 lanes per D
  static D zero_double() { return _mm512_setzero_pd(); }
  static void accumulate_double(F v, D& lo, D& hi) {
    lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
  }
  static D add_double(D a, D b) { return _mm512_add_pd(a, b); }
  static void store_double(double* p, D v) { _mm512_storeu_pd(p, v); }
  // (lo + hi) lanes summed in order from 0.
  static double reduce_double(D lo, D hi) {
    alignas(64) double lanes[8];
    _mm512_store_pd(lanes, _mm512_add_pd(lo, hi));
    double sum = 0.0;
    for (double v : lanes) sum += v;
    return sum;
  }

  // --- 16-bit floats (f16, bf16): 16 of them in a ymm
  using H = __m256i;
  static H load_h(const uint16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store_h(uint16_t* p, H v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static F load_f16(const uint16_t* p) { return f16_to_f32(load_h(p)); }
  static F load_bf16(const uint16_t* p) { return bf16_to_f32(load_h(p)); }
  static H load_h_first(const uint16_t* p, int64_t count) { return _mm256_maskz_loadu_epi16(tail_mask(count), p); }
  static void store_h_first(uint16_t* p, H v, int64_t count) { _mm256_mask_storeu_epi16(p, tail_mask(count), v); }
  static F f16_to_f32(H h) { return _mm512_cvtph_ps(h); }
  // int8 values and fp8 e4m3 bytes (read as f16 s.0eeee.mmm0000000, exact for subnormals too: the
  // value / 2^8), 16 of them at p, or the first `count` (the rest 0; nothing else read).
  static F load_i8(const int8_t* p) { return i8_to_f32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F load_i8_first(const int8_t* p, int64_t count) { return i8_to_f32(_mm_maskz_loadu_epi8(tail_mask(count), p)); }
  static F load_e4m3(const uint8_t* p) { return e4m3_to_f32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F load_e4m3_first(const uint8_t* p, int64_t count) { return e4m3_to_f32(_mm_maskz_loadu_epi8(tail_mask(count), p)); }
  static F i8_to_f32(__m128i b) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b)); }
  static F e4m3_to_f32(__m128i raw) {
    const __m256i b = _mm256_cvtepu8_epi16(raw);
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8);
    const __m256i rest = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7F)), 7);
    return _mm512_cvtph_ps(_mm256_or_si256(sign, rest));
  }
  static H f32_to_f16(F v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F bf16_to_f32(H h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  // Round to nearest even in integer arithmetic (subnormals kept, unlike vcvtneps2bf16 which
  // flushes them); NaN -> quiet NaN, sign kept.
  static H f32_to_bf16(F v) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
    const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7F800000));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    __m512i result = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), lsb), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    result = _mm512_mask_mov_epi32(result, is_nan, quiet);
    return _mm512_cvtepi32_epi16(result);
  }
};

}  // namespace
}  // namespace lemma::kernels::x86
