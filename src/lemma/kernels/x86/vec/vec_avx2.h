// The width-generic vector layer on AVX2 + FMA + F16C: VecAvx2, 8 f32 lanes in a ymm register.
// Every member is a thin inline wrapper over the intrinsics the AVX2 kernels always used, so a
// kernel written once over Vec (x86/simd/) compiles here to the same instruction sequences. Tails
// go through small stack buffers (AVX2 has no byte-granular masked loads). The AVX-512 twin is
// vec_avx512.h; both spell the same members. Included only by sources compiled with AVX2 flags;
// everything is in an anonymous namespace, so no object exports an ISA-flagged copy the linker
// could pick for other callers.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/x86/horizontal_sum.h"

namespace lemma::kernels::x86 {
namespace {

struct VecAvx2 {
  static constexpr int kWidth = 8;       // f32 lanes
  static constexpr int kRegisters = 16;  // vector registers
  using F = __m256;   // f32 lanes
  using I = __m256i;  // int32 lanes (or 32 bytes)
  using D = __m256d;  // half the lanes widened to f64
  using Mask = __m256;  // per lane all ones or zero (a comparison's result)

  // --- f32 lanes
  // Whether `count` elements fill a vector: the common case, kept on the fall-through path (the
  // buffer copies of a partial vector are laid out of line).
  static bool whole(int64_t count) { return __builtin_expect(count >= kWidth, 1); }
  // A partial vector through an 8-element stack buffer: p's first `count` elements, the rest `fill`.
  template <auto load_full, class T>
  static auto via_buffer(const T* p, int64_t count, T fill) {
    T buf[8];
    for (T& b : buf) b = fill;
    std::memcpy(buf, p, static_cast<size_t>(count) * sizeof(T));
    return load_full(buf);
  }
  template <auto store_full, class T, class V>
  static void store_via_buffer(T* p, V v, int64_t count) {
    T buf[8];
    store_full(buf, v);
    std::memcpy(p, buf, static_cast<size_t>(count) * sizeof(T));
  }

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F load_aligned(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void store_aligned(float* p, F v) { _mm256_store_ps(p, v); }
  // p[0, min(count, 8)), the other lanes 0 (or `fill`); count >= 0. Only those entries are read.
  static F load_first(const float* p, int64_t count) { return load_first(p, count, 0.0f); }
  static F load_first(const float* p, int64_t count, float fill) { return whole(count) ? load(p) : via_buffer<load>(p, count, fill); }
  // Writes lanes [0, min(count, 8)) to p; count >= 0.
  static void store_first(float* p, F v, int64_t count) { whole(count) ? store(p, v) : store_via_buffer<store>(p, v, count); }
  // Lanes of m from p (masked lanes are 0 and never read) / to p; m from first_lanes_mask.
  static F load_masked(const float* p, __m256 m) { return _mm256_maskload_ps(p, _mm256_castps_si256(m)); }
  static void store_masked(float* p, F v, __m256 m) { _mm256_maskstore_ps(p, _mm256_castps_si256(m), v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  // min/max return their second operand when either is NaN.
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }   // a * b + c, one rounding
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a * b, one rounding
  static F abs(F v) { return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))); }
  // Lane i + lane i + 4, then i + i+2, then 0 + 1 (horizontal_sum.h: every kernel reduces so).
  static float reduce_add(F v) { return reduce8(v); }
  // The largest lane by a tree of vmaxps (keep NaN out of v; a tie of +0 and -0 gives either).
  static float reduce_max(F v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
  }
  // The largest lane as the row ops and vocabulary passes take it: lanes in order, the first of
  // equal ones, NaN lanes skipped (-inf if every lane is NaN).
  static float reduce_max_in_order(F v) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    float max = -__builtin_inff();
    for (float lane : lanes) max = lane > max ? lane : max;
    return max;
  }

  // exp: Cephes-style range reduction, degree-6 polynomial, 2^n built in two factors so n = 128
  // works; results below FLT_MIN flush to 0 (-inf -> 0), above 88.72 -> +inf, NaN stays NaN.
  static F exp(F x_in) {
    constexpr float kHi = 88.7228394f, kLo = -87.3365479f;
    const auto pow2 = [](__m256i n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23)); };
    // min/max return their second operand for NaN, so a NaN input stays NaN throughout.
    __m256 x = _mm256_min_ps(_mm256_set1_ps(kHi), x_in);
    x = _mm256_max_ps(_mm256_set1_ps(kLo), x);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i ni = _mm256_cvtps_epi32(n);  // in [-126, 128]
    const __m256i half = _mm256_srai_epi32(ni, 1);
    __m256 result = _mm256_mul_ps(_mm256_mul_ps(y, pow2(half)), pow2(_mm256_sub_epi32(ni, half)));
    result = _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x_in, _mm256_set1_ps(kHi), _CMP_GT_OQ));
    return _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x_in, _mm256_set1_ps(kLo), _CMP_LT_OQ));
  }

  // --- int32 lanes
  static I zero_i32() { return _mm256_setzero_si256(); }
  static I set1_i32(int32_t v) { return _mm256_set1_epi32(v); }
  static I add_i32(I a, I b) { return _mm256_add_epi32(a, b); }
  static I sub_i32(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I min_i32(I a, I b) { return _mm256_min_epi32(a, b); }
  static I max_i32(I a, I b) { return _mm256_max_epi32(a, b); }
  static I load_i(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static I set1_i8(char v) { return _mm256_set1_epi8(v); }
  static I sub_i16(I a, I b) { return _mm256_sub_epi16(a, b); }
  // Unsigned bytes u times signed bytes x, adjacent products summed to int16 (saturating).
  static I pair_sums_u8i8(I u, I x) { return _mm256_maddubs_epi16(u, x); }
  static I and_i32(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_i32(I a, I b) { return _mm256_or_si256(a, b); }
  template <int N>
  static I shift_right_i32(I v) { return _mm256_srli_epi32(v, N); }  // logical
  template <int N>
  static I shift_left_i32(I v) { return _mm256_slli_epi32(v, N); }
  // `value` in the lanes where h & bit is set (bit: a single bit), else 0.
  static I where_bit(I h, I bit, I value) { return _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_and_si256(h, bit), bit), value); }
  // 8 bytes at p as int32 lanes, zero- or sign-extended.
  static I load_u8_i32(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static I load_i8_i32(const uint8_t* p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static I to_int(F v) { return _mm256_cvtps_epi32(v); }  // rounds half to even (MXCSR's default)
  static F to_float(I v) { return _mm256_cvtepi32_ps(v); }
  static int32_t reduce_add_i32(I v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
  }
  // 32 int32 values (q[0..3], lanes in order) as 32 bytes at out: int8 (-128..127) or uint8 (0..255).
  static void store_i8x32(int8_t* out, const I* q) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), unpack_order(_mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]))));
  }
  static void store_u8x32(uint8_t* out, const I* q) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), unpack_order(_mm256_packus_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]))));
  }

  // Byte J (0..3) of each 32-bit lane, sign-extended.
  template <int J>
  static I signed_byte(I v) { return _mm256_srai_epi32(_mm256_slli_epi32(v, 24 - 8 * J), 24); }

  // Lane i: the sum of a[i]'s 8 lanes (a[0..7]), each in a fixed order that never mixes in the other
  // vectors (so a lane's sum does not depend on them).
  static F reduce_add_each(const F* a) {
    const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    // t0 = [a0..a3 summed over the low 128 bits | a0..a3 over the high 128 bits], t1 likewise.
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
  }

  // --- lane masks
  static Mask first_lanes_mask(int64_t count) {  // lanes [0, count) set; count >= 0
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count < 8 ? count : 8)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  }
  static Mask no_lanes() { return _mm256_setzero_ps(); }
  static Mask is_nan(F v) { return _mm256_cmp_ps(v, v, _CMP_UNORD_Q); }
  static Mask is_ordered(F v) { return _mm256_cmp_ps(v, v, _CMP_ORD_Q); }
  static Mask eq(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  static Mask gt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static Mask ge(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  static Mask mask_or(Mask a, Mask b) { return _mm256_or_ps(a, b); }
  static Mask mask_and(Mask a, Mask b) { return _mm256_and_ps(a, b); }
  static bool any(Mask m) { return _mm256_movemask_ps(m) != 0; }
  static unsigned bits(Mask m) { return static_cast<unsigned>(_mm256_movemask_ps(m)); }  // bit i: lane i
  static unsigned first_lanes(int64_t count) { return count >= kWidth ? 0xFFu : (1u << count) - 1u; }
  static F select(Mask m, F if_set, F if_clear) { return _mm256_blendv_ps(if_clear, if_set, m); }
  static F zero_unless(Mask m, F v) { return _mm256_and_ps(v, m); }
  // Writes base + i for each set bit i of `lanes`, ascending, to out; returns how many.
  static int store_lane_indices(int32_t* out, unsigned lanes, int32_t base) {
    int count = 0;
    for (; lanes != 0; lanes &= lanes - 1) out[count++] = base + __builtin_ctz(lanes);
    return count;
  }

  // --- f64 sums of f32 lanes: lanes 0-3 into lo, 4-7 into hi
  static constexpr int kDoubles = 4;  // f64 lanes per D
  static D zero_double() { return _mm256_setzero_pd(); }
  static void accumulate_double(F v, D& lo, D& hi) {
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  static D add_double(D a, D b) { return _mm256_add_pd(a, b); }
  static void store_double(double* p, D v) { _mm256_storeu_pd(p, v); }
  // ((lo + hi) lanes summed in order from lane 0).
  static double reduce_double(D lo, D hi) {
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(lo, hi));
    return ((lanes[0] + lanes[1]) + lanes[2]) + lanes[3];
  }

  // Undoes the lane interleave of two rounds of 128-bit-lane packs.
  static I unpack_order(I packed) { return _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)); }

  // --- 16-bit floats (f16, bf16): 8 of them in an xmm
  using H = __m128i;
  static H load_h(const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static void store_h(uint16_t* p, H v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
  static F load_f16(const uint16_t* p) { return f16_to_f32(load_h(p)); }
  static F load_bf16(const uint16_t* p) { return bf16_to_f32(load_h(p)); }
  static H load_h_first(const uint16_t* p, int64_t count) {  // zero-filled; count >= 0
    return whole(count) ? load_h(p) : via_buffer<load_h>(p, count, uint16_t{0});
  }
  static void store_h_first(uint16_t* p, H v, int64_t count) { whole(count) ? store_h(p, v) : store_via_buffer<store_h>(p, v, count); }
  static F f16_to_f32(H h) { return _mm256_cvtph_ps(h); }
  // int8 values and fp8 e4m3 bytes (read as f16 s.0eeee.mmm0000000, exact for subnormals too: the
  // value / 2^8), 8 of them at p, or the first `count` (the rest 0).
  static F load_i8(const int8_t* p) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))); }
  static F load_e4m3(const uint8_t* p) {
    const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m128i sign = _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8);
    const __m128i rest = _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x7F)), 7);
    return _mm256_cvtph_ps(_mm_or_si128(sign, rest));
  }
  static F load_i8_first(const int8_t* p, int64_t count) { return whole(count) ? load_i8(p) : via_buffer<load_i8>(p, count, int8_t{0}); }
  static F load_e4m3_first(const uint8_t* p, int64_t count) {
    return whole(count) ? load_e4m3(p) : via_buffer<load_e4m3>(p, count, uint8_t{0});
  }
  static H f32_to_f16(F v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F bf16_to_f32(H h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  // Round to nearest even in integer arithmetic (subnormals kept); NaN -> quiet NaN, sign kept.
  static H f32_to_bf16(F v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), lsb), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
    const __m256i result = _mm256_blendv_epi8(rounded, quiet, is_nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(result), _mm256_extracti128_si256(result, 1));
  }
};

}  // namespace
}  // namespace lemma::kernels::x86
