// GGUF Q8_0/Q4_0/Q5_0 weights x int8 activations (int8_activations.h) with AVX-512 VNNI.
// Register tile of up to 4 rows of x by 3 rows of W: per pair of 32-value blocks, each W row is
// decoded once to 64 signed codes (natural order), its scales [d_b x8, d_b+1 x8] and the correction
// -128 * (sum of 4 codes) per int32 lane; each x row is one zmm of unsigned codes (q + 128), so
// vpdpbusd started from the correction gives the exact lane sums S_j of both blocks, and one FMA with
// d_w * d_x adds them to 16 f32 lanes (block b to lanes 8 * (b % 2) + j, as the reference does).
// Every output runs the same instructions whatever tile it lands in: rows never depend on M.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/x86/horizontal_sum.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

constexpr int kMaxRows = 4;  // of x per register tile
constexpr int kMaxCols = 3;  // rows of W per register tile

float f16_at(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

// Signed codes of blocks b and b + 1 (or of block b alone, upper half zero) and their scales.
struct Codes {
  __m512i q;
  __m512 d;
};

__m512 pair_scales(const uint8_t* b0, const uint8_t* b1) {
  return _mm512_insertf32x8(_mm512_set1_ps(f16_at(b0)), _mm256_set1_ps(f16_at(b1)), 1);
}
__m512 single_scale(const uint8_t* b0) { return _mm512_zextps256_ps512(_mm256_set1_ps(f16_at(b0))); }

__m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
__m128i load128(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// 16 bytes of packed nibbles -> 32 codes 0..15 in value order (low nibbles are values 0..15).
__m256i nibbles(__m128i packed) {
  const __m128i low = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low), _mm_and_si128(packed, low));
}

struct Q8_0 {
  static constexpr int64_t kBytes = 34;
  static Codes pair(const uint8_t* p) {
    return {_mm512_inserti64x4(_mm512_castsi256_si512(load256(p + 2)), load256(p + kBytes + 2), 1),
            pair_scales(p, p + kBytes)};
  }
  static Codes single(const uint8_t* p) { return {_mm512_zextsi256_si512(load256(p + 2)), single_scale(p)}; }
};

struct Q4_0 {
  static constexpr int64_t kBytes = 18;
  static Codes pair(const uint8_t* p) {
    const __m512i eight = _mm512_set1_epi8(8);
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(nibbles(load128(p + 2))), nibbles(load128(p + kBytes + 2)), 1);
    return {_mm512_sub_epi8(q, eight), pair_scales(p, p + kBytes)};
  }
  static Codes single(const uint8_t* p) {
    return {_mm512_zextsi256_si512(_mm256_sub_epi8(nibbles(load128(p + 2)), _mm256_set1_epi8(8))), single_scale(p)};
  }
};

struct Q5_0 {
  static constexpr int64_t kBytes = 22;
  static uint32_t high_bits(const uint8_t* p) {
    uint32_t qh;
    std::memcpy(&qh, p + 2, 4);
    return qh;
  }
  static Codes pair(const uint8_t* p) {
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(nibbles(load128(p + 6))), nibbles(load128(p + kBytes + 6)), 1);
    const __mmask64 high = static_cast<__mmask64>(high_bits(p)) | (static_cast<__mmask64>(high_bits(p + kBytes)) << 32);
    const __m512i q5 = _mm512_mask_add_epi8(q, high, q, _mm512_set1_epi8(16));
    return {_mm512_sub_epi8(q5, _mm512_set1_epi8(16)), pair_scales(p, p + kBytes)};
  }
  static Codes single(const uint8_t* p) {
    const __m256i q = nibbles(load128(p + 6));
    const __m256i q5 = _mm256_mask_add_epi8(q, high_bits(p), q, _mm256_set1_epi8(16));
    return {_mm512_zextsi256_si512(_mm256_sub_epi8(q5, _mm256_set1_epi8(16))), single_scale(p)};
  }
};

// -128 * (sum of codes 4j..4j+3) per lane: the vpdpbusd start that undoes the +128 of x's codes.
__m512i correction(__m512i q) {
  const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), q);
  return _mm512_sub_epi32(_mm512_setzero_si512(), sums);
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
  for (int c = 0; c < C; ++c) w[c] = static_cast<const uint8_t*>(a.w) + (n0 + c) * a.w_row_bytes;
  const uint8_t* xc[R];
  const float* xs[R];
  for (int r = 0; r < R; ++r) {
    xc[r] = int8_codes(a.xq, a.K, m0 + r);
    xs[r] = int8_scales(a.xq, a.M, a.K, m0 + r);
  }
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    Codes wq[C];
    __m512i start[C];
    for (int c = 0; c < C; ++c) {
      // The same place in the row C rows on (the next tile's): W streams ahead of its use.
      _mm_prefetch(reinterpret_cast<const char*>(w[c] + b * W::kBytes + C * a.w_row_bytes), _MM_HINT_T0);
      wq[c] = W::pair(w[c] + b * W::kBytes);
      start[c] = correction(wq[c].q);
    }
    for (int r = 0; r < R; ++r) {
      const __m512i x = _mm512_load_si512(xc[r] + b * kInt8ActivationBlock);
      const __m512 dx = x_scales(xs[r] + b);
      for (int c = 0; c < C; ++c) {
        const __m512i sums = _mm512_dpbusd_epi32(start[c], x, wq[c].q);
        acc[r][c] = _mm512_fmadd_ps(_mm512_mul_ps(wq[c].d, dx), _mm512_cvtepi32_ps(sums), acc[r][c]);
      }
    }
  }
  if (b < blocks) {  // an odd last block: lanes 0..7 only (x's padding codes meet zero weights)
    Codes wq[C];
    __m512i start[C];
    for (int c = 0; c < C; ++c) {
      wq[c] = W::single(w[c] + b * W::kBytes);
      start[c] = correction(wq[c].q);
    }
    for (int r = 0; r < R; ++r) {
      const __m512i x = _mm512_load_si512(xc[r] + b * kInt8ActivationBlock);
      const __m512 dx = x_scales(xs[r] + b);
      for (int c = 0; c < C; ++c) {
        const __m512i sums = _mm512_dpbusd_epi32(start[c], x, wq[c].q);
        acc[r][c] = _mm512_mask3_fmadd_ps(_mm512_mul_ps(wq[c].d, dx), _mm512_cvtepi32_ps(sums), acc[r][c], 0x00FF);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      const float y = reduce16(acc[r][c]);
      a.y[(m0 + r) * a.y_stride + n0 + c] = a.bias != nullptr ? y + a.bias[n0 + c] : y;
    }
  }
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
