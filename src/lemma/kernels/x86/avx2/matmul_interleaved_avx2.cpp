// Interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / Q4_1x16 / Q5_1x16 (and I8Z32x16 / I4Z32x16, the same sums with per-row zero
// points in the start value) weights x signed int8 activations with AVX2, for CPUs
// without AVX-512 VNNI (interleaved_blocks.h has the layout). A 64-byte code chunk holds 4 values
// of 16 rows; its two halves are 8 rows each, one ymm. AVX2 has no vpdpbusd, so the 4-value dots
// are vpmaddubsw (unsigned x signed bytes, adjacent pairs summed to int16) then vpmaddwd by ones
// (int16 pairs to int32). Everything stays exact, so every output is bit for bit the oracle's
// (matmul_q*_0x16_int8_reference: one f32 accumulator, blocks in order, fma(d_w * d_x, float(S), acc)):
// - Q4_0x16: the unsigned nibbles u (0..15) times x (-127..127): a pair is at most 3810 in
//   magnitude, so a block's 8 pair sums per int16 lane (4 chunks, low and high nibbles) stay below
//   32767 and one vpmaddwd per block and half finishes them; S starts at -8 (x's block sum), as u = q + 8.
// - Q5_0x16: u = nibble | fifth bit << 4 (0..31), the fifth bits spread from their 64-bit masks by a
//   byte shuffle, an and and a compare; pairs reach 7874, so vpmaddwd runs after every 4.
// - Q8_0x16: q = u - 128 may be -128, and |x| times q's sign would overflow there; |q| (0..128,
//   unsigned) times x with q's sign (x is never -128) is exact, pairs at most 32512: one vpmaddwd each.
// - IQ4_NLx16 / IQ4_XSx16: each nibble's table value q (-127..113) by one byte shuffle, then as Q8_0x16
//   (|q| times x with q's sign); IQ4_XS's scales f32(d) * (ls - 32) unpacked per 32-value sub-block.
// Register tile: up to 2 rows of x by one group (both halves), for every M: rows never depend on M.
// No software prefetch: each thread's groups are one forward stream (see matmul_interleaved_vnni.cpp).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/kernels/x86/avx2/interleaved_avx2.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/interleaved_formats.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int64_t kBlock = 32;

// s[r] = start[r] + half H's nibble sums (4 chunks of Q4_0x16 nibble bytes at `codes`, u 0..15)
// against row r of x: exact, u * |x| <= 1905, so a block's 8 pairs per int16 lane stay below 32767.
template <int R, int H>
[[gnu::always_inline]] inline void nibble_sums(const uint8_t* codes, const int8_t* const (&x)[R], const __m256i (&start)[R], __m256i (&s)[R]) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  __m256i t[R];
  for (int r = 0; r < R; ++r) t[r] = _mm256_setzero_si256();
  for (int p = 0; p < 4; ++p) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 64 * p + 32 * H));
    const __m256i lo = _mm256_and_si256(v, low), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    for (int r = 0; r < R; ++r) {
      t[r] = _mm256_add_epi16(t[r], _mm256_maddubs_epi16(lo, broadcast4(x[r] + 4 * p)));
      t[r] = _mm256_add_epi16(t[r], _mm256_maddubs_epi16(hi, broadcast4(x[r] + 16 + 4 * p)));
    }
  }
  for (int r = 0; r < R; ++r) s[r] = _mm256_add_epi32(widen(t[r]), start[r]);
}

// One 32-value block per superblock: f16 scales at its start (row i at 2 i).
template <class W>
struct OneBlockSuper {
  static const uint8_t* super(const uint8_t* group, int64_t b) { return group + b * W::kSuperBytes; }
  template <int H>
  static __m256 scales(const uint8_t* group, int64_t b) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super(group, b) + 16 * H)));
  }
};

// The exact int32 sums S (row lanes) of one block for R rows of x and half H (rows 8 H .. 8 H + 7) of
// the group, written to s[r].
// Q4_0 (u = q + 8: S starts at -8 x's block sum) and Q4_1 (kMins: u as it is after d and m, S from
// 0, an m term per block).
template <bool kMinsT>
struct Q4Family : OneBlockSuper<Q4Family<kMinsT>> {
  static constexpr int64_t kSuperBytes = kMinsT ? 16 * 20 : 16 * 18;
  static constexpr int kPrefillRows = 2;  // rows of x per register tile for M > 2 (measured: 3, 4 slower)
  static constexpr bool kMins = kMinsT;
  template <int R, int H>
  static void sums(const uint8_t* super, const int8_t* const (&x)[R], const int32_t (&xsum)[R], __m256i (&s)[R]) {
    __m256i start[R];
    for (int r = 0; r < R; ++r) start[r] = _mm256_set1_epi32(kMinsT ? 0 : -8 * xsum[r]);
    nibble_sums<R, H>(super + (kMinsT ? 64 : 32), x, start, s);
  }
};
using Q4x16 = Q4Family<false>;
using Q41x16 = Q4Family<true>;

// Q5_0 (u = q + 16) and Q5_1 (kMins), as Q4Family.
template <bool kMinsT>
struct Q5Family : OneBlockSuper<Q5Family<kMinsT>> {
  static constexpr int64_t kSuperBytes = kMinsT ? 16 * 24 : 16 * 22;
  static constexpr int kPrefillRows = 4;  // the mask spreads serve 4 rows of x (faster than 2)
  static constexpr bool kMins = kMinsT;
  template <int R, int H>
  static void sums(const uint8_t* super, const int8_t* const (&x)[R], const int32_t (&xsum)[R], __m256i (&s)[R]) {
    const uint8_t* codes = super + (kMinsT ? 64 : 32);
    const __m256i low = _mm256_set1_epi8(0x0F);
    const uint8_t* masks = codes + 4 * 64;
    for (int r = 0; r < R; ++r) s[r] = _mm256_set1_epi32(kMinsT ? 0 : -16 * xsum[r]);
    for (int half = 0; half < 2; ++half) {  // chunks 2 half, 2 half + 1: 4 pair sums per int16 lane
      __m256i t[R];
      for (int r = 0; r < R; ++r) t[r] = _mm256_setzero_si256();
      for (int p = 2 * half; p < 2 * half + 2; ++p) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 64 * p + 32 * H));
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, low), mask_bytes(masks + 8 * p + 4 * H, 16));
        const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low), mask_bytes(masks + 8 * (p + 4) + 4 * H, 16));
        for (int r = 0; r < R; ++r) {
          t[r] = _mm256_add_epi16(t[r], _mm256_maddubs_epi16(lo, broadcast4(x[r] + 4 * p)));
          t[r] = _mm256_add_epi16(t[r], _mm256_maddubs_epi16(hi, broadcast4(x[r] + 16 + 4 * p)));
        }
      }
      for (int r = 0; r < R; ++r) s[r] = _mm256_add_epi32(s[r], widen(t[r]));
    }
  }
};
using Q5x16 = Q5Family<false>;
using Q51x16 = Q5Family<true>;

struct Q8x16 : OneBlockSuper<Q8x16> {
  static constexpr int64_t kSuperBytes = 16 * 34;
  static constexpr int kPrefillRows = 2;  // 3 and 4 measured alike
  template <int R, int H>
  static void sums(const uint8_t* super, const int8_t* const (&x)[R], const int32_t (&)[R], __m256i (&s)[R]) {
    for (int r = 0; r < R; ++r) s[r] = _mm256_setzero_si256();
    add_byte_sums<R, H>(super + 32, x, s);
  }
};

// IQ4_NL: half H's sums of table value * x over 4 chunks of nibble bytes at `codes`.
template <int R, int H>
[[gnu::always_inline]] inline void iq4_sums(const uint8_t* codes, const int8_t* const (&x)[R], __m256i (&s)[R]) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
  for (int r = 0; r < R; ++r) s[r] = _mm256_setzero_si256();
  for (int p = 0; p < 4; ++p) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 64 * p + 32 * H));
    const __m256i q[2] = {_mm256_shuffle_epi8(table, _mm256_and_si256(v, low)),
                          _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), low))};
    for (int h = 0; h < 2; ++h) {  // low nibbles: values 4 p + t; high: 16 + 4 p + t
      const __m256i magnitude = _mm256_abs_epi8(q[h]);
      for (int r = 0; r < R; ++r)
        s[r] = _mm256_add_epi32(s[r], widen(_mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(broadcast4(x[r] + 16 * h + 4 * p), q[h]))));
    }
  }
}

struct Iq4NLx16 : OneBlockSuper<Iq4NLx16> {
  static constexpr int64_t kSuperBytes = 16 * 18;
  static constexpr int kPrefillRows = 2;
  template <int R, int H>
  static void sums(const uint8_t* super, const int8_t* const (&x)[R], const int32_t (&)[R], __m256i (&s)[R]) {
    iq4_sums<R, H>(super + 32, x, s);
  }
};

// IQ4_XS: super(group, b) is block b's codes (sub-block b % 8 of superblock b / 8).
struct Iq4XSx16 {
  using L = Iq4XsX16Layout;
  static constexpr int64_t kSuperBytes = L::kSuperBytes / 8;  // bytes per 32-value block
  static constexpr int kPrefillRows = 2;
  static const uint8_t* head(const uint8_t* group, int64_t b) { return group + b / 8 * L::kSuperBytes; }
  static const uint8_t* super(const uint8_t* group, int64_t b) { return head(group, b) + L::kCodesAt + L::kSubBlockBytes * (b % 8); }
  template <int H>
  static __m256 scales(const uint8_t* group, int64_t b) {
    const uint8_t* h = head(group, b);
    const auto s = static_cast<int>(b % 8);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 16 * H)));
    const __m256i high = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + L::kScalesHighAt + 16 * H)));
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + L::kScalesLowAt + 32 * H));
    const __m256i ls = _mm256_or_si256(_mm256_and_si256(_mm256_srlv_epi32(low, _mm256_set1_epi32(4 * s)), _mm256_set1_epi32(15)),
                                       _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(high, _mm256_set1_epi32(2 * s)), _mm256_set1_epi32(3)), 4));
    return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))));
  }
  template <int R, int H>
  static void sums(const uint8_t* codes, const int8_t* const (&x)[R], const int32_t (&)[R], __m256i (&s)[R]) {
    iq4_sums<R, H>(codes, x, s);
  }
};

// Half H's zero points (rows 8 H .. 8 H + 7) of an I8Z32x16 / I4Z32x16 superblock as int32 lanes.
template <int H>
__m256i zeros_of(const uint8_t* super) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(super + IntZx16Layout::kZerosAt + 8 * H)));
}

// I4Z32x16: Q4x16's nibble sums (u, 0..15, same bounds), S starting at -z * x's block sum per lane.
struct I4Zx16 : OneBlockSuper<I4Zx16> {
  static constexpr int64_t kSuperBytes = 16 * 19;
  static constexpr int kPrefillRows = 2;
  template <int R, int H>
  static void sums(const uint8_t* super, const int8_t* const (&x)[R], const int32_t (&xsum)[R], __m256i (&s)[R]) {
    const __m256i z = zeros_of<H>(super);
    __m256i start[R];
    for (int r = 0; r < R; ++r) start[r] = _mm256_mullo_epi32(z, _mm256_set1_epi32(-xsum[r]));
    nibble_sums<R, H>(super + IntZx16Layout::kCodesAt, x, start, s);
  }
};

// I8Z32x16: u (0..255) read as q = u - 128 (a sign flip), summed as Q8x16 does (|q| times x with q's
// sign), S starting at (128 - z) * x's block sum: sum (u - z) x = sum q x + (128 - z) sum x.
struct I8Zx16 : OneBlockSuper<I8Zx16> {
  static constexpr int64_t kSuperBytes = 16 * 35;
  static constexpr int kPrefillRows = 2;
  template <int R, int H>
  static void sums(const uint8_t* super, const int8_t* const (&x)[R], const int32_t (&xsum)[R], __m256i (&s)[R]) {
    const __m256i offset = _mm256_sub_epi32(_mm256_set1_epi32(128), zeros_of<H>(super));
    for (int r = 0; r < R; ++r) s[r] = _mm256_mullo_epi32(offset, _mm256_set1_epi32(xsum[r]));
    add_byte_sums<R, H>(super + IntZx16Layout::kCodesAt, x, s);
  }
};

template <class W, int R>
void tile(const MatmulArgs& a, int64_t m0, int64_t g) {
  const int64_t blocks = a.K / kBlock;
  const uint8_t* group = static_cast<const uint8_t*>(a.w) + g * blocks * W::kSuperBytes;  // kSuperBytes: per 32 values
  Int8SignedRow x[R];
  for (int r = 0; r < R; ++r) x[r] = int8_signed_row(a.xq, a.K, m0 + r);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* super = W::super(group, b);
    const int8_t* xb[R];
    int32_t xsum[R];
    for (int r = 0; r < R; ++r) {
      xb[r] = x[r].codes + b * kBlock;
      xsum[r] = x[r].sums[b];
    }
    // One half at a time, its sums folded into the accumulators at once (fewer live registers).
    const auto half = [&]<int H>() {
      __m256i s[R];
      W::template sums<R, H>(super, xb, xsum, s);
      const __m256 d = W::template scales<H>(group, b);
      for (int r = 0; r < R; ++r)
        acc[r][H] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x[r].scales[b])), _mm256_cvtepi32_ps(s[r]), acc[r][H]);
      if constexpr (has_mins<W>()) {  // Q4_1 / Q5_1: + m * d_x * x's block code sum
        const __m256 m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + 32 + 16 * H)));
        for (int r = 0; r < R; ++r)
          acc[r][H] = _mm256_fmadd_ps(_mm256_mul_ps(m, _mm256_set1_ps(x[r].scales[b])), _mm256_set1_ps(static_cast<float>(xsum[r])), acc[r][H]);
      }
    };
    half.template operator()<0>();
    half.template operator()<1>();
  }
  store_group<VecAvx2, R>(a, m0, g, [&](int r, int h) { return acc[r][h]; });
}

template <class W>
void run(const MatmulArgs& a) {
  for_each_group<W::kPrefillRows>(a, [&]<int R, int G>(int64_t m0, int64_t g) { tile<W, R>(a, m0, g); });
}

}  // namespace

void matmul_q8_0x16_int8_avx2(const MatmulArgs& args) { run<Q8x16>(args); }
void matmul_q4_0x16_int8_avx2(const MatmulArgs& args) { run<Q4x16>(args); }
void matmul_q5_0x16_int8_avx2(const MatmulArgs& args) { run<Q5x16>(args); }
void matmul_i8z32x16_int8_avx2(const MatmulArgs& args) { run<I8Zx16>(args); }
void matmul_i4z32x16_int8_avx2(const MatmulArgs& args) { run<I4Zx16>(args); }
void matmul_iq4_nlx16_int8_avx2(const MatmulArgs& args) { run<Iq4NLx16>(args); }
void matmul_iq4_xsx16_int8_avx2(const MatmulArgs& args) { run<Iq4XSx16>(args); }
void matmul_q4_1x16_int8_avx2(const MatmulArgs& args) { run<Q41x16>(args); }
void matmul_q5_1x16_int8_avx2(const MatmulArgs& args) { run<Q51x16>(args); }

}  // namespace lemma::kernels::x86
