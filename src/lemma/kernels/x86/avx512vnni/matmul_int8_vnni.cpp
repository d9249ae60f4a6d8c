// GGUF Q8_0/Q4_0/Q5_0 weights x int8 activations (int8_activations.h) with AVX-512 VNNI.
// Register tile of up to 4 rows of x by 3 rows of W: per pair of 32-value blocks, each W row is
// decoded once to 64 unsigned codes (natural order) and its scales [d_b x8, d_b+1 x8]; each x row
// once to 64 signed codes and a start value per int32 lane (see Codes), so one vpdpbusd gives the
// exact lane sums S_j of both blocks, and one FMA with d_w * d_x adds them to 16 f32 lanes (block b
// to lanes 8 * (b % 2) + j, as the reference does).
// Every output runs the same instructions whatever tile it lands in: rows never depend on M.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/x86/horizontal_sum.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/int8_tiles.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int kMaxRows = 4;  // of x per register tile
constexpr int kMaxCols = 3;  // rows of W per register tile

// Unsigned codes u = q_w + kBias of blocks b and b + 1 (or of block b alone, upper half zero) and
// their scales. vpdpbusd takes u as its unsigned operand and x's signed codes as the other, so
// sum u * q_x = S_j + kBias * (sum of x's 4 codes): the start value -kBias * (x's sum), computed once
// per row of x, leaves the exact S_j. Q4_0's nibbles and Q5_0's 5-bit codes are u themselves; Q8_0
// flips the sign bit. Cheaper than the signed weight plus a per-weight-row correction.
struct Codes {
  __m512i u;
  __m512 d;
};

uint16_t f16_bits(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return bits;
}
// [d_b x8, d_b+1 x8] widened from f16 in one conversion (two word broadcasts from memory; a vpermw
// of the pair's first 64 bytes measured slower).
__m512 pair_scales(const uint8_t* b0, const uint8_t* b1) {
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<short>(f16_bits(b0)))),
                                                 _mm_set1_epi16(static_cast<short>(f16_bits(b1))), 1));
}
__m512 single_scale(const uint8_t* b0) {
  return _mm512_cvtph_ps(_mm256_zextsi128_si256(_mm_set1_epi16(static_cast<short>(f16_bits(b0)))));
}

__m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
__m128i load128(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// The 16 bytes of packed nibbles of blocks b and b + 1 -> 64 codes 0..15 in value order (each
// block's low nibbles are its values 0..15): both 16-byte halves are loaded twice, the second copy
// shifted down by 4.
__m512i nibble_pair(const uint8_t* q0, const uint8_t* q1) {
  const __m512i twice = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(load128(q0))),
                                           _mm256_broadcastsi128_si256(load128(q1)), 1);
  const __m512i shifted = _mm512_mask_srli_epi64(twice, 0xCC, twice, 4);
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
}
__m256i nibbles(const uint8_t* q0) {
  const __m128i packed = load128(q0);
  const __m128i low = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low), _mm_and_si128(packed, low));
}

struct Q8_0 {
  static constexpr int64_t kBytes = 34;
  static constexpr char kBias = static_cast<char>(128);
  static Codes pair(const uint8_t* p) {
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(load256(p + 2)), load256(p + kBytes + 2), 1);
    return {_mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80))), pair_scales(p, p + kBytes)};
  }
  static Codes single(const uint8_t* p) {
    return {_mm512_zextsi256_si512(_mm256_xor_si256(load256(p + 2), _mm256_set1_epi8(static_cast<char>(0x80)))),
            single_scale(p)};
  }
};

struct Q4_0 {
  static constexpr int64_t kBytes = 18;
  static constexpr char kBias = 8;
  static Codes pair(const uint8_t* p) { return {nibble_pair(p + 2, p + kBytes + 2), pair_scales(p, p + kBytes)}; }
  static Codes single(const uint8_t* p) { return {_mm512_zextsi256_si512(nibbles(p + 2)), single_scale(p)}; }
};

struct Q5_0 {
  static constexpr int64_t kBytes = 22;
  static constexpr char kBias = 16;
  static uint32_t high_bits(const uint8_t* p) {
    uint32_t qh;
    std::memcpy(&qh, p + 2, 4);
    return qh;
  }
  static Codes pair(const uint8_t* p) {
    const __m512i q = nibble_pair(p + 6, p + kBytes + 6);
    const __mmask64 high = static_cast<__mmask64>(high_bits(p)) | (static_cast<__mmask64>(high_bits(p + kBytes)) << 32);
    return {_mm512_mask_add_epi8(q, high, q, _mm512_set1_epi8(16)), pair_scales(p, p + kBytes)};
  }
  static Codes single(const uint8_t* p) {
    const __m256i q = nibbles(p + 6);
    return {_mm512_zextsi256_si512(_mm256_mask_add_epi8(q, high_bits(p), q, _mm256_set1_epi8(16))), single_scale(p)};
  }
};

// x's 64 codes as signed bytes (the buffer holds q + 128) and the start -kBias * (sum of codes
// 4j..4j+3) per int32 lane.
struct XCodes {
  __m512i q;
  __m512i start;
};
template <class W>
XCodes x_codes(const uint8_t* p) {
  const __m512i q = _mm512_xor_si512(_mm512_load_si512(p), _mm512_set1_epi8(static_cast<char>(0x80)));
  const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(W::kBias), q);
  return {q, _mm512_sub_epi32(_mm512_setzero_si512(), sums)};
}

// [d_x of block b x8, d_x of block b + 1 x8].
__m512 x_scales(const float* s) {
  const __m512i halves = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  return _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(s)))));
}

template <class W, int R, int C>
void tile(const MatmulArgs& a, int64_t m0, int64_t n0) {
  const int64_t blocks = a.K / kInt8ActivationBlock;
  const uint8_t* w[C];
  weight_rows<C>(a, n0, w);
  const uint8_t* xc[R];
  const float* xs[R];
  for (int r = 0; r < R; ++r) {
    xc[r] = int8_codes(a.xq, a.K, m0 + r);
    xs[r] = int8_scales(a.xq, a.K, m0 + r);
  }
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    Codes wq[C];
    for (int c = 0; c < C; ++c) {
      // The same place in the row C rows on (the next tile's): W streams ahead of its use.
      _mm_prefetch(reinterpret_cast<const char*>(w[c] + b * W::kBytes + C * a.w_row_bytes), _MM_HINT_T0);
      wq[c] = W::pair(w[c] + b * W::kBytes);
    }
    for (int r = 0; r < R; ++r) {
      const XCodes x = x_codes<W>(xc[r] + b * kInt8ActivationBlock);
      const __m512 dx = x_scales(xs[r] + b);
      for (int c = 0; c < C; ++c) {
        const __m512i sums = _mm512_dpbusd_epi32(x.start, wq[c].u, x.q);
        acc[r][c] = _mm512_fmadd_ps(_mm512_mul_ps(wq[c].d, dx), _mm512_cvtepi32_ps(sums), acc[r][c]);
      }
    }
  }
  if (b < blocks) {  // an odd last block: lanes 0..7 only (x's padding codes meet zero weights)
    Codes wq[C];
    for (int c = 0; c < C; ++c) wq[c] = W::single(w[c] + b * W::kBytes);
    for (int r = 0; r < R; ++r) {
      const XCodes x = x_codes<W>(xc[r] + b * kInt8ActivationBlock);
      const __m512 dx = x_scales(xs[r] + b);
      for (int c = 0; c < C; ++c) {
        const __m512i sums = _mm512_dpbusd_epi32(x.start, wq[c].u, x.q);
        acc[r][c] = _mm512_mask3_fmadd_ps(_mm512_mul_ps(wq[c].d, dx), _mm512_cvtepi32_ps(sums), acc[r][c], 0x00FF);
      }
    }
  }
  float y[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) y[r][c] = reduce16(acc[r][c]);
  store_sums<R, C>(a, m0, n0, y);
}

template <class W>
void run(const MatmulArgs& a) {
  for_each_tile<kMaxRows, kMaxCols>(a.M, a.N, [&]<int R, int C>(int64_t m0, int64_t n0) { tile<W, R, C>(a, m0, n0); });
}

}  // namespace

void matmul_q8_0_int8_avx512vnni(const MatmulArgs& a) { run<Q8_0>(a); }
void matmul_q4_0_int8_avx512vnni(const MatmulArgs& a) { run<Q4_0>(a); }
void matmul_q5_0_int8_avx512vnni(const MatmulArgs& a) { run<Q5_0>(a); }

}  // namespace lemma::kernels::x86
