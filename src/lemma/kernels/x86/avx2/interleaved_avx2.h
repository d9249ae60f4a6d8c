// Pieces the AVX2 interleaved-weight kernels share (interleaved_blocks.h): x's 4-code broadcasts,
// int16 pair sums widened to int32, the fifth/high-bit masks spread to bytes, the K-quants' spread
// prefetch and scale bytes. A 64-byte chunk of a group holds 4 values of 16 rows; the
// AVX2 kernels read it as two halves of 8 rows, one ymm each.
// Included only by sources compiled with AVX2; `static inline` keeps each copy local to its object
// file (see horizontal_sum.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul_args.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/register_tiles.h"
#include "lemma/kernels/x86/vec/vec_avx2.h"

namespace lemma::kernels::x86 {

// 4 signed codes of x broadcast to every 32-bit lane (the signed operand of vpmaddubsw).
static inline __m256i broadcast4(const int8_t* p) { return _mm256_set1_epi32(load_i32(p)); }

// int16 pair sums -> int32 per row (each row's 32-bit lane holds two int16).
static inline __m256i widen(__m256i pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }

// The 32 bits of a little-endian mask at p -> 32 bytes of `value` (bit set) or 0: byte b takes bit b.
static inline __m256i mask_bytes(const uint8_t* p, int8_t value) {
  int32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(bits), _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
  return _mm256_and_si256(set, _mm256_set1_epi8(value));
}

// The K-quant kernels' software prefetch (they read a superblock in several places, which the
// hardware prefetchers follow poorly): part `step` of `steps` of a superblock's lines, 8 KiB ahead.
constexpr int64_t kPrefetchAhead = 8192;

static inline void prefetch_part(const uint8_t* super, int64_t bytes, int step, int steps) {
  const int64_t lines = (bytes + 63) / 64;
  for (int64_t line = lines * step / steps; line < lines * (step + 1) / steps; ++line)
    _mm_prefetch(reinterpret_cast<const char*>(super + kPrefetchAhead + 64 * line), _MM_HINT_T0);
}

// Byte J (0..3) of each 32-bit lane, zero-extended to int32.
template <int J>
static inline __m256i unsigned_byte(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi32(v, 8 * J), _mm256_set1_epi32(0xFF));
}

// Adds half H's sum of q * x to s[r], q = byte ^ 0x80 (8 chunks of Q8_0x16 code bytes at `codes`;
// x: R rows of 32 signed codes): |q| (0..128, unsigned) times x with q's sign, as q may be -128
// and x never is; pairs at most 32512 in magnitude, so every sum is exact.
template <int R, int H>
[[gnu::always_inline]] static inline void add_byte_sums(const uint8_t* codes, const int8_t* const (&x)[R], __m256i (&s)[R]) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int j = 0; j < 8; ++j) {
    const __m256i q = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 64 * j + 32 * H)), flip);
    const __m256i magnitude = _mm256_abs_epi8(q);
    for (int r = 0; r < R; ++r)
      s[r] = _mm256_add_epi32(s[r], widen(_mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(broadcast4(x[r] + 4 * j), q))));
  }
}

// The AVX2 interleaved kernels' walk: one group per tile, up to 2 rows of x for M <= 2 (decode), up
// to PrefillRows otherwise.
template <int PrefillRows, class Tile>
static inline void for_each_group(const MatmulArgs& a, Tile&& tile) {
  for_each_group_tile<2, TileShape{2, 1}, TileShape{PrefillRows, 1}>(a, tile);
}

}  // namespace lemma::kernels::x86
