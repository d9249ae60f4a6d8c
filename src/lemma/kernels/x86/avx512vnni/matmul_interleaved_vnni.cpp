// Interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / Q4_1x16 / Q5_1x16 / IQ4_NLx16 / IQ4_XSx16 and I8Z32x16 /
// I4Z32x16 weights x signed int8 activations with AVX-512 VNNI (interleaved_blocks.h). Per block, per
// group of 16 W rows and row of x: 8 vpdpbusd (each 4 values of the 16 rows against 4 codes of x
// broadcast from memory), started from -bias * (x's block sum), give the 16 exact sums S_b; then one
// convert, one multiply by d_w * d_x and one FMA for 16 outputs. Register tile: up to R rows of x by
// G groups (6 x 2 for prefill, 4 x 2 for batched decode, Q5_0x16 one group; 2 x 1 for decode).
// Every output runs the same instructions whatever tile it lands in: rows never depend on M.
// Decode reads one group at a time (Q8_0x16: four, see Q8x16) so that a thread's rows are one
// forward stream (groups lie one after the other): tiles of several groups read streams kilobytes
// apart, which the memory system overlapped poorly with compute. The blocks' int32 sums are exact
// and independent, so one group per tile still keeps several vpdpbusd chains in flight. That stream
// is prefetched into L2 4 KiB ahead (prefetch_decode_stream, interleaved_tiles.h; into L1 each
// prefetch would hold a miss buffer the hardware stream does not). (The K-quant kernels read each
// superblock in several places and keep their L1 prefetch.)
// Batches of up to kFetchNextMaxRows rows (batched decode) read each tile of groups from memory in
// their first pass over it and from L1 in the others, while memory idles: the later passes fetch
// the next tile's blocks, pass p (1 .. P - 1) block b when b % (P - 1) == p - 1 (counted, no
// division per block), so the next first pass finds its W in cache. Prefill (more rows) keeps the
// plain walk: there the fetches slowed it down.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/kernels/x86/int8_kernels.h"
#include "lemma/kernels/x86/interleaved_formats.h"
#include "lemma/kernels/x86/interleaved_tiles.h"
#include "lemma/kernels/x86/vec/vec_avx512.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

namespace {

using Vec = VecAvx512;

constexpr int64_t kBlock = 32;
constexpr int64_t kFetchNextMaxRows = 64;

// Each format: kSuperBytes, kCodesAt (the codes' offset in a superblock), and either kMins (u as it
// is, S from 0, an m term per block), kBiasShift
// (codes are q + 2^kBiasShift: S starts at -x's block sum << kBiasShift) or kZeros (the rows' own
// zero points z at IntZx16Layout::kZerosAt: S starts at -z * x's block sum, per row lane).
struct Q8x16 {
  static constexpr int kPrefillGroups = 2;  // 16-row groups per register tile for M > 2
  // For M <= 2: four streams, each 4 KiB ahead into L2, read Q8_0x16 faster than one (Q4_0x16,
  // whose superblocks are half the bytes, read slower so and keeps one).
  static constexpr int kDecodeGroups = 4;
  static constexpr int64_t kSuperBytes = 16 * 34, kCodesAt = 32;
  static constexpr bool kZeros = false;
  static constexpr int kBiasShift = 7;  // codes are q + 128
  // f(j, u): u[g] = the unsigned codes of values 4j..4j+3 of group g's 16 rows, j = 0..7, for the
  // G groups of a register tile in step, so that each broadcast of x meets every group at once.
  // (With the groups one after the other the compiler kept all 32 broadcasts of a 4 x 2 tile live
  // and spilled the accumulators.)
  template <int G, class F>
  static void for_each_quad(const uint8_t* const* codes, F&& f) {
    for (int j = 0; j < 8; ++j) {
      __m512i u[G];
      for (int g = 0; g < G; ++g) u[g] = _mm512_loadu_si512(codes[g] + 64 * j);
      f(j, u);
    }
  }
};

struct Q4x16 {
  static constexpr int kPrefillGroups = 2;  // 16-row groups per register tile for M > 2
  static constexpr int64_t kSuperBytes = 16 * 18, kCodesAt = 32;
  static constexpr bool kZeros = false;
  static constexpr int kBiasShift = 3;  // codes are q + 8
  template <int G, class F>
  static void for_each_quad(const uint8_t* const* codes, F&& f) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    for (int p = 0; p < 4; ++p) {
      __m512i v[G], u[G];
      for (int g = 0; g < G; ++g) v[g] = _mm512_loadu_si512(codes[g] + 64 * p);
      for (int g = 0; g < G; ++g) u[g] = _mm512_and_si512(v[g], low);
      f(p, u);
      for (int g = 0; g < G; ++g) u[g] = _mm512_and_si512(_mm512_srli_epi16(v[g], 4), low);
      f(p + 4, u);
    }
  }
};

struct Q5x16 {
  // One group per tile: the fifth-bit masks' adds leave too few registers for two.
  static constexpr int kPrefillGroups = 1;
  static constexpr int64_t kSuperBytes = 16 * 22, kCodesAt = 32;
  static constexpr bool kZeros = false;
  static constexpr int kBiasShift = 4;  // codes are q + 16
  template <int G, class F>
  static void for_each_quad(const uint8_t* const* codes, F&& f) {
    const __m512i low = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
    for (int p = 0; p < 4; ++p) {
      __m512i v[G], u[G];
      for (int g = 0; g < G; ++g) v[g] = _mm512_loadu_si512(codes[g] + 64 * p);
      for (int g = 0; g < G; ++g) {
        const __m512i lo = _mm512_and_si512(v[g], low);
        u[g] = _mm512_mask_add_epi8(lo, Vec::load_mask64(codes[g] + 4 * 64 + 8 * p), lo, sixteen);
      }
      f(p, u);
      for (int g = 0; g < G; ++g) {
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v[g], 4), low);
        u[g] = _mm512_mask_add_epi8(hi, Vec::load_mask64(codes[g] + 4 * 64 + 8 * (p + 4)), hi, sixteen);
      }
      f(p + 4, u);
    }
  }
};

// Q4_1 / Q5_1: Q4_0x16's / Q5_0x16's codes after the rows' d and m, u unsigned as it is (no bias);
// each block adds m * d_x * (x's block code sum) after d's term.
struct Q41x16 : Q4x16 {
  static constexpr int64_t kSuperBytes = 16 * 20, kCodesAt = 64;
  static constexpr bool kMins = true;
};
struct Q51x16 : Q5x16 {
  static constexpr int64_t kSuperBytes = 16 * 24, kCodesAt = 64;
  static constexpr bool kMins = true;
};

// IQ4_NL: Q4_0x16's nibbles, each turned into its table value + 128 (1..241) by one byte shuffle.
struct Iq4NLx16 {
  static constexpr int kPrefillGroups = 2;  // 16-row groups per register tile for M > 2
  static constexpr int64_t kSuperBytes = 16 * 18, kCodesAt = 32;
  static constexpr bool kZeros = false;
  static constexpr int kBiasShift = 7;  // codes are table value + 128
  template <int G, class F>
  static void for_each_quad(const uint8_t* const* codes, F&& f) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4UnsignedCodes.data())));
    for (int p = 0; p < 4; ++p) {
      __m512i v[G], u[G];
      for (int g = 0; g < G; ++g) v[g] = _mm512_loadu_si512(codes[g] + 64 * p);
      for (int g = 0; g < G; ++g) u[g] = _mm512_shuffle_epi8(table, _mm512_and_si512(v[g], low));
      f(p, u);
      for (int g = 0; g < G; ++g) u[g] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v[g], 4), low));
      f(p + 4, u);
    }
  }
};

// IQ4_XS: 8 sub-blocks (32-value blocks of the kernel's loop) per superblock, IQ4_NL's codes, scales
// f32(d) * (ls - 32) unpacked for 16 rows from the superblock's head.
struct Iq4XSx16 : Iq4NLx16 {
  using L = Iq4XsX16Layout;
  static constexpr int kSubBlocks = 8;
  static constexpr int64_t kSuperBytes = L::kSuperBytes, kCodesAt = L::kCodesAt;
  static __m512 scales(const uint8_t* super, int s) {
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super)));
    const __m512i high = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + L::kScalesHighAt)));
    const __m512i low = _mm512_loadu_si512(super + L::kScalesLowAt);  // row i's 4 bytes: nibble s at bit 4 s
    const __m512i ls = _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi32(low, _mm512_set1_epi32(4 * s)), _mm512_set1_epi32(15)),
                                       _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(high, _mm512_set1_epi32(2 * s)), _mm512_set1_epi32(3)), 4));
    return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(ls, _mm512_set1_epi32(32))));
  }
};

// Block b of a group: its codes, and its 16 rows' f32 scales.
template <class W>
const uint8_t* block_codes(const uint8_t* group, int64_t b) {
  constexpr int S = sub_blocks<W>();
  if constexpr (S > 1) return group + b / S * W::kSuperBytes + W::kCodesAt + (b % S) * Iq4XsX16Layout::kSubBlockBytes;
  return group + b * W::kSuperBytes + W::kCodesAt;
}
template <class W>
__m512 block_scales(const uint8_t* group, int64_t b) {
  constexpr int S = sub_blocks<W>();
  if constexpr (S > 1) return W::scales(group + b / S * W::kSuperBytes, static_cast<int>(b % S));
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + b * W::kSuperBytes)));
}

// lemma int8 / int4 with zero points: Q8_0x16's / Q4_0x16's code chunks after the zeros.
struct I8Zx16 {
  static constexpr int kPrefillGroups = 2;  // 16-row groups per register tile for M > 2
  static constexpr int64_t kSuperBytes = 16 * 35, kCodesAt = IntZx16Layout::kCodesAt;
  static constexpr bool kZeros = true;
  static constexpr int kBiasShift = 0;
  template <int G, class F>
  static void for_each_quad(const uint8_t* const* codes, F&& f) { Q8x16::for_each_quad<G>(codes, f); }
};

struct I4Zx16 {
  static constexpr int kPrefillGroups = 2;  // 16-row groups per register tile for M > 2
  static constexpr int64_t kSuperBytes = 16 * 19, kCodesAt = IntZx16Layout::kCodesAt;
  static constexpr bool kZeros = true;
  static constexpr int kBiasShift = 0;
  template <int G, class F>
  static void for_each_quad(const uint8_t* const* codes, F&& f) { Q4x16::for_each_quad<G>(codes, f); }
};

// 16-row groups per register tile for M <= 2 (W::kDecodeGroups, else one: a thread's rows one stream).
template <class W>
constexpr int decode_groups() {
  if constexpr (requires { W::kDecodeGroups; }) return W::kDecodeGroups;
  return 1;
}

// What a register tile prefetches besides its own reads: block b of the next tile's groups when
// b % parts == part (parts > 0), else its own groups ahead of its reads.
struct Fetch {
  int64_t parts = 0;
  int64_t part = 0;
};

// kDecode: the M <= 2 walk, one stream per group (prefetch_decode_stream).
template <class W, int R, int G, bool kDecode = false>
void tile(const MatmulArgs& a, int64_t m0, int64_t g0, Fetch fetch = {}) {
  const int64_t blocks = a.K / kBlock;
  const uint8_t* group[G];
  group_starts<G>(a, g0, blocks / sub_blocks<W>(), W::kSuperBytes, group);
  Int8SignedRow x[R];
  for (int r = 0; r < R; ++r) x[r] = int8_signed_row(a.xq, a.K, m0 + r);
  __m512 acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
  int64_t phase = 0;  // b % fetch.parts, counted
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i s[R][G];
    if constexpr (W::kZeros) {
      for (int g = 0; g < G; ++g) {
        const __m128i z8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(group[g] + b * W::kSuperBytes + IntZx16Layout::kZerosAt));
        const __m512i z = _mm512_cvtepu8_epi32(z8);
        for (int r = 0; r < R; ++r) s[r][g] = _mm512_mullo_epi32(z, _mm512_set1_epi32(-x[r].sums[b]));
      }
    } else {
      for (int r = 0; r < R; ++r) {
        // (Q4_1 / Q5_1: u as it is, S from 0; their m term is added after d's.)
        const __m512i start = _mm512_set1_epi32(has_mins<W>() ? 0 : -x[r].sums[b] * (1 << W::kBiasShift));
        for (int g = 0; g < G; ++g) s[r][g] = start;
      }
    }
    // Each group's stream advances by kSuperBytes / sub-blocks per block.
    constexpr int64_t kBlockBytes = W::kSuperBytes / sub_blocks<W>();
    if (fetch.parts > 0) {
      if (phase == fetch.part) {
        for (int g = 0; g < G; ++g) {
          const char* next = reinterpret_cast<const char*>(group[g] + G * (blocks / sub_blocks<W>()) * W::kSuperBytes + b * kBlockBytes);
          for (int64_t line = 0; line < kBlockBytes; line += 64) _mm_prefetch(next + line, _MM_HINT_T0);
        }
      }
      if (++phase == fetch.parts) phase = 0;
    } else {
      for (int g = 0; g < G; ++g) {
        if constexpr (kDecode) {
          prefetch_decode_stream(group[g] + b * kBlockBytes, kBlockBytes);
        } else if constexpr (G > 1) {
          prefetch_stream<G>(group[g] + b * kBlockBytes, kBlockBytes);
        }
      }
    }
    const uint8_t* codes[G];
    for (int g = 0; g < G; ++g) codes[g] = block_codes<W>(group[g], b);
    W::template for_each_quad<G>(codes, [&](int j, const __m512i* u) {
      for (int r = 0; r < R; ++r) {
        const __m512i xj = _mm512_set1_epi32(load_i32(x[r].codes + b * kBlock + 4 * j));
        for (int g = 0; g < G; ++g) s[r][g] = _mm512_dpbusd_epi32(s[r][g], u[g], xj);
      }
    });
    for (int g = 0; g < G; ++g) {
      const __m512 dw = block_scales<W>(group[g], b);
      for (int r = 0; r < R; ++r)
        acc[r][g] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(x[r].scales[b])), _mm512_cvtepi32_ps(s[r][g]), acc[r][g]);
      if constexpr (has_mins<W>()) {
        const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group[g] + b * W::kSuperBytes + 32)));
        for (int r = 0; r < R; ++r)
          acc[r][g] = _mm512_fmadd_ps(_mm512_mul_ps(mw, _mm512_set1_ps(x[r].scales[b])), _mm512_set1_ps(static_cast<float>(x[r].sums[b])), acc[r][g]);
      }
    }
  }
  store_tile<Vec, R, G>(a, m0, g0, acc);
}

// Rows of x per register tile: 4 for batched decode (the passes that fetch the next tile), 6 for
// prefill (faster there than 4; no faster at 32 rows).
constexpr int kBatchRows = 4, kPrefillRows = 6;

template <class W>
void run(const MatmulArgs& a) {
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  if (a.M <= 2) {
    for_each_tile<2, decode_groups<W>()>(a.M, groups, [&]<int R, int G>(int64_t m0, int64_t g0) { tile<W, R, G, true>(a, m0, g0); });
  } else if (a.M <= kFetchNextMaxRows) {
    const int64_t later = std::min<int64_t>((a.M + kBatchRows - 1) / kBatchRows - 1, a.K / kBlock);  // passes that fetch
    for_each_tile<kBatchRows, W::kPrefillGroups>(a.M, groups, [&]<int R, int G>(int64_t m0, int64_t g0) {
      const int64_t pass = m0 / kBatchRows;
      if (pass == 0 || pass > later) {
        tile<W, R, G>(a, m0, g0);
      } else {
        tile<W, R, G>(a, m0, g0, Fetch{.parts = later, .part = pass - 1});
      }
    });
  } else {
    for_each_tile<kPrefillRows, W::kPrefillGroups>(a.M, groups, [&]<int R, int G>(int64_t m0, int64_t g0) { tile<W, R, G>(a, m0, g0); });
  }
}

}  // namespace

void matmul_q8_0x16_int8_avx512vnni(const MatmulArgs& args) { run<Q8x16>(args); }
void matmul_q4_0x16_int8_avx512vnni(const MatmulArgs& args) { run<Q4x16>(args); }
void matmul_q5_0x16_int8_avx512vnni(const MatmulArgs& args) { run<Q5x16>(args); }
void matmul_i8z32x16_int8_avx512vnni(const MatmulArgs& args) { run<I8Zx16>(args); }
void matmul_i4z32x16_int8_avx512vnni(const MatmulArgs& args) { run<I4Zx16>(args); }
void matmul_iq4_nlx16_int8_avx512vnni(const MatmulArgs& args) { run<Iq4NLx16>(args); }
void matmul_iq4_xsx16_int8_avx512vnni(const MatmulArgs& args) { run<Iq4XSx16>(args); }
void matmul_q4_1x16_int8_avx512vnni(const MatmulArgs& args) { run<Q41x16>(args); }
void matmul_q5_1x16_int8_avx512vnni(const MatmulArgs& args) { run<Q51x16>(args); }

}  // namespace lemma::kernels::x86
