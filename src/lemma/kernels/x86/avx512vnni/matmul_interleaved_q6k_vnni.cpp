// Interleaved Q6_Kx16 weights x Q8_K-style int8 activations with AVX-512 VNNI (interleaved_blocks.h).
// Per 256-value block and group of 16 W rows, per 4 values of the 16 rows: two ql chunks and one qh
// chunk give four 6-bit code vectors (a nibble and a bit pair each, joined with one vpternlogd),
// each one vpdpbusd against 4 codes of x broadcast from memory. A sub-block's sum starts at
// -32 s_j (x's 16-value code sum), so it ends as sum (u - 32) q_x with no extra instruction; it is
// weighted by the rows' int8 scales with vpmulld. Then one conversion and one FMA for 16 outputs.
// All integer sums are exact, so the bits equal the oracle's whatever the instruction order.
// Register tile: one group (decode: each thread's rows are one forward stream, prefetched into
// L2 4 KiB ahead; prefill: the code vectors, the costly part, serve up to 4 rows of x). Rows never depend on M.
#include <immintrin.h>

#include <cstring>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/vec/vec_avx512.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

using Vec = VecAvx512;

constexpr int64_t kValues = 256;
constexpr int64_t kSuperBytes = kInterleaveRows * 210;
constexpr int64_t kScalesAt = 32, kLowAt = 288, kHighAt = 2336;


// (a & 0x0F) | b for every byte (b holds only bits 4 and 5).
__m512i join(__m512i a, __m512i b, __m512i low4) { return _mm512_ternarylogic_epi32(a, b, low4, 0xEC); }

template <int R, int G>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  kquant_group_tile<Vec, R, G>(a, m0, g0, kSuperBytes, [&](int64_t b, const uint8_t* const (&group)[G], const Q8kRows<R>& x, __m512 (&acc)[R][G]) {
    for (int g = 0; g < G; ++g) {
      const uint8_t* super = group[g] + b * kSuperBytes;
      __m512i sc[4];
      for (int w = 0; w < 4; ++w) sc[w] = _mm512_loadu_si512(super + kScalesAt + 64 * w);
      __m512i S[R];
      for (int r = 0; r < R; ++r) S[r] = _mm512_setzero_si512();
      // Half h, values 4p .. 4p + 3 of each of its quarters; p < 4 and p >= 4 are different sub-blocks.
      const auto quarter_pass = [&]<int H, int Q>() {
        __m512i U[R][4];  // sub-blocks 8H + 2k + Q, k = quarter
        for (int r = 0; r < R; ++r)
          for (int k = 0; k < 4; ++k) U[r][k] = _mm512_set1_epi32(-32 * x.sums[r][b * 16 + 8 * H + 2 * k + Q]);
        for (int p = 4 * Q; p < 4 * Q + 4; ++p) {
          prefetch_stream_part<G, 16>(super, kSuperBytes, 8 * H + 4 * Q + p % 4);
          const __m512i lo_a = _mm512_loadu_si512(super + kLowAt + 64 * (16 * H + p));
          const __m512i lo_b = _mm512_loadu_si512(super + kLowAt + 64 * (16 * H + 8 + p));
          const __m512i hi = _mm512_loadu_si512(super + kHighAt + 64 * (8 * H + p));
          const __m512i u[4] = {
              join(lo_a, _mm512_and_si512(_mm512_slli_epi16(hi, 4), bits45), low4),
              join(lo_b, _mm512_and_si512(_mm512_slli_epi16(hi, 2), bits45), low4),
              join(_mm512_srli_epi16(lo_a, 4), _mm512_and_si512(hi, bits45), low4),
              join(_mm512_srli_epi16(lo_b, 4), _mm512_and_si512(_mm512_srli_epi16(hi, 2), bits45), low4)};
          for (int r = 0; r < R; ++r) {
            const int8_t* xc = x.codes[r] + b * kValues + 128 * H + 4 * p;
            for (int k = 0; k < 4; ++k) U[r][k] = _mm512_dpbusd_epi32(U[r][k], u[k], _mm512_set1_epi32(load_i32(xc + 32 * k)));
          }
        }
        // Sub-block j = 8H + 2k + Q: scale byte j % 4 of chunk j / 4 = 2H + k / 2.
        const __m512i scale[4] = {Vec::signed_byte<(2 * 0 + Q) % 4>(sc[2 * H + 0]), Vec::signed_byte<(2 * 1 + Q) % 4>(sc[2 * H + 0]),
                                  Vec::signed_byte<(2 * 2 + Q) % 4>(sc[2 * H + 1]), Vec::signed_byte<(2 * 3 + Q) % 4>(sc[2 * H + 1])};
        for (int r = 0; r < R; ++r)
          for (int k = 0; k < 4; ++k) S[r] = _mm512_add_epi32(S[r], _mm512_mullo_epi32(scale[k], U[r][k]));
      };
      for_each_quarter(quarter_pass);
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super)));
      for (int r = 0; r < R; ++r)
        acc[r][g] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x.scales[r][b])), _mm512_cvtepi32_ps(S[r]), acc[r][g]);
    }
  });
}

}  // namespace

void matmul_q6_kx16_int8_avx512vnni(const MatmulArgs& a) {
  for_each_group_tile<1, TileShape{1, 1}, TileShape{4, 1}>(a, [&]<int R, int G>(int64_t m0, int64_t g0) { tile<R, G>(a, m0, g0); });
}

}  // namespace lemma::kernels::x86
