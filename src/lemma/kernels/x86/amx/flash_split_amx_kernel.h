// The AMX-BF16 flash-attention split kernel for a bf16 KV cache (see attention/flash_attention.h),
// written once over a tile backend: HardwareTiles (tiles_hardware.h) or TileEmulator
// (tile_emulator.h). Query rows are the call's (token, head) pairs, 16 to a row tile; keys run in
// chunks of 256 from key_begin, each cut into 16-key tiles at fixed offsets from the chunk's start.
// Everything is computed transposed, so that the softmax runs down the lanes:
//   scores  S^T[key][row] = K . Q^T: A = 16 key rows x 32 dims (read in place from the paged cache
//           when 16 whole rows lie in one block, else staged), B = the row tile's queries as
//           VNNI pairs of dims. q = hi + lo (two bf16 halves, as the AVX512_BF16 kernel takes it):
//           two TDPBF16PS per step, lo first;
//   softmax one zmm per key holds the 16 rows' scores: masks, max, exp and the running sum are
//           lane-wise (each row's sum adds its keys in key order, so it does not depend on the
//           other rows); the weights w = hi + lo again;
//   values  O^T[dim][row] += V^T . P^T: A = 16 dims x 32 keys (V transposed once per chunk and
//           shared by every row tile), B = the weights of 32 keys as VNNI pairs of keys (two
//           keys' bf16 rows interleaved); two TDPBF16PS per step (lo, then hi) into C tiles that
//           start from the rescaled running output.
// A row's chain of operations depends only on its own query, its position and the chunk's keys:
// keys it does not see get weight 0 (their products are exact zeros) and key tiles no row of the
// tile sees are skipped, so a row gives the same bits alone (decode) or inside any prefill. (One
// exception in sign only: an output that is exactly zero can come out -0 in one and +0 in the other.)
// Keys outside the call's readable range [first key, key_end) are never read (staged as zeros).
// Scratch: about 330 KiB in the caller's KernelScratch (FlashSplitArgs::scratch), grown once.
// Internal linkage: included by the hardware and the emulated kernel's sources only.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "lemma/kernels/attention/flash_split_args.h"
#include "lemma/kernels/x86/amx/scratch_as.h"
#include "lemma/kernels/x86/amx/tile_config.h"
#include "lemma/kernels/x86/vec/vec_avx512.h"

namespace lemma::kernels::x86::amx {
namespace {

constexpr int64_t kFlashChunk = 256;       // keys per chunk (the model's split, kFlashSplitKeys)
constexpr int64_t kFlashMaxHeadDim = 256;  // longer heads take the AVX-512 kernel
constexpr int64_t kKeyTile = 16;           // keys per score tile
constexpr int64_t kKeyStep = 32;           // keys per value step (16 pairs)
constexpr int64_t kDimStep = 32;           // dims per score step (16 pairs)
constexpr int64_t kDimBlock = 16;          // dims per output tile
constexpr int64_t kKeyTiles = kFlashChunk / kKeyTile;
constexpr int64_t kKeySteps = kFlashChunk / kKeyStep;
constexpr int64_t kMaxDimSteps = kFlashMaxHeadDim / kDimStep;
constexpr int64_t kMaxDimBlocks = kFlashMaxHeadDim / kDimBlock;
constexpr float kFlashNegInf = -std::numeric_limits<float>::infinity();

struct alignas(64) Tile {  // 16 rows of 64 bytes: bf16 pairs (as 32-bit words) or f32
  uint32_t w[16][16];
};

struct FlashScratch {
  Tile k_stage[kKeyTiles][kMaxDimSteps];  // K tiles not readable in place: [key][dim pair]
  Tile vt[kKeySteps][kMaxDimBlocks];      // V^T: [dim][key pair] per (key step, dim block)
  Tile qt[2][kMaxDimSteps];               // Q^T, lo and hi: [dim pair][row] per dim step
  Tile pt[2][kKeySteps];                  // P^T, lo and hi: [key pair][row] per key step
  alignas(64) float st[kFlashChunk][16];  // scores [key][row]
  alignas(64) float ot[kFlashMaxHeadDim][16];  // running outputs [dim][row]
  const char* v_rows[kFlashChunk];        // the chunk's value rows (readable keys only)
  const char* k_tile[kKeyTiles];          // A of key tile t, dim step s: k_tile[t] + s * k_step[t]
  int64_t k_step[kKeyTiles], k_stride[kKeyTiles];
};

// In place: r[i] holds words (i, 0..15); after: r[j] holds words (0..15, j).
[[gnu::always_inline]] inline void transpose16(__m512i* r) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + j], 128-bit lane L: rows 4g .. 4g + 3 of column 4L + j.
  __m512i u[16];
  for (int g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i y0 = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512i x1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i y1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(3, 1, 3, 1));
    r[j] = _mm512_shuffle_i32x4(x0, x1, _MM_SHUFFLE(2, 0, 2, 0));
    r[4 + j] = _mm512_shuffle_i32x4(y0, y1, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + j] = _mm512_shuffle_i32x4(x0, x1, _MM_SHUFFLE(3, 1, 3, 1));
    r[12 + j] = _mm512_shuffle_i32x4(y0, y1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// bf16 of each lane (round to nearest even) in the lane's low 16 bits.
inline __m512i bf16_bits(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  return _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
}
// x = hi + lo, both bf16 (16 of x's 24 mantissa bits; every bf16 x bf16 product is exact in f32).
inline void bf16_halves(__m512 x, __m512i& hi, __m512i& lo) {
  hi = bf16_bits(x);
  lo = bf16_bits(_mm512_sub_ps(x, _mm512_castsi512_ps(_mm512_slli_epi32(hi, 16))));
}
// Lanes' low halves of a (values 0..15) then of b (16..31) as 32 bf16: word p = values 2p, 2p + 1.
inline __m512i pack_pairs(__m512i a, __m512i b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(a)), _mm512_cvtepi32_epi16(b), 1);
}
inline void store_tile_row(Tile& t, int64_t row, __m512i v) { _mm512_store_si512(t.w[row], v); }

// The call's (token, head) row i: its query and position.
const float* query_row(const FlashSplitArgs& a, int64_t i) {
  return a.q + i / a.group * a.q_row_stride + i % a.group * a.head_dim;
}
int64_t row_position(const FlashSplitArgs& a, int64_t i) { return a.first_position + i / a.group; }

// Keys [lo, hi) that row i sees within [g0, c1).
std::pair<int64_t, int64_t> visible_keys(const FlashSplitArgs& a, int64_t i, int64_t g0, int64_t c1) {
  const int64_t pos = row_position(a, i);
  const int64_t window_lo = a.sliding_window > 0 ? pos - a.sliding_window + 1 : 0;
  return {std::max(g0, window_lo), std::min(c1, pos + 1)};
}

int64_t key_slot(const FlashSplitArgs& a, int64_t j) {
  return int64_t{a.block_table[j / a.block_size]} * a.block_size + j % a.block_size;
}

// The chunk [c0, c0 + 256), readable keys [g0, c1): where each key tile's A is (in place when its
// 16 rows are readable, lie in one block and are whole 32-dim steps; else staged with zeros for keys
// outside [g0, c1) and dims past head_dim), and V^T for every key step.
void prepare_chunk(const FlashSplitArgs& a, int64_t c0, int64_t g0, int64_t c1, int64_t dim_steps, FlashScratch& s) {
  const int64_t hd = a.head_dim, row_bytes = a.token_stride * 2;
  const auto* keys = static_cast<const char*>(a.keys);
  const auto* values = static_cast<const char*>(a.values);
  for (int64_t j = g0; j < c1; ++j) s.v_rows[j - c0] = values + key_slot(a, j) * row_bytes;
  const int64_t t_lo = (g0 - c0) / kKeyTile, t_hi = (c1 - c0 + kKeyTile - 1) / kKeyTile;
  for (int64_t t = t_lo; t < t_hi; ++t) {
    const int64_t k0 = c0 + t * kKeyTile;
    // In place when the tile's 16 keys are consecutive slots of one block (a first and last slot
    // 15 apart would not prove it: small blocks of a shuffled table can hold them in another order).
    if (k0 >= g0 && k0 + kKeyTile <= c1 && hd % kDimStep == 0 && k0 % a.block_size + kKeyTile <= a.block_size) {
      s.k_tile[t] = keys + key_slot(a, k0) * row_bytes;
      s.k_step[t] = kDimStep * 2;
      s.k_stride[t] = row_bytes;
      continue;
    }
    for (int64_t st = 0; st < dim_steps; ++st) {
      const int64_t d0 = st * kDimStep;
      const __mmask32 m = hd - d0 >= 32 ? ~__mmask32{0} : (__mmask32{1} << (hd - d0)) - 1;
      for (int64_t r = 0; r < kKeyTile; ++r) {
        const int64_t j = k0 + r;
        const __m512i row = j >= g0 && j < c1
                                ? _mm512_maskz_loadu_epi16(m, keys + key_slot(a, j) * row_bytes + d0 * 2)
                                : _mm512_setzero_si512();
        store_tile_row(s.k_stage[t][st], r, row);
      }
    }
    s.k_tile[t] = reinterpret_cast<const char*>(&s.k_stage[t][0]);
    s.k_step[t] = sizeof(Tile);
    s.k_stride[t] = 64;
  }
  // V^T: word (p, d) = values d of keys 2p and 2p + 1, transposed to rows d.
  const int64_t blocks = (hd + kDimBlock - 1) / kDimBlock;
  for (int64_t u = (g0 - c0) / kKeyStep; u < (c1 - c0 + kKeyStep - 1) / kKeyStep; ++u)
    for (int64_t b = 0; b < blocks; ++b) {
      const __mmask16 m = VecAvx512::tail_mask(hd - b * kDimBlock);
      __m512i r[16];
      for (int64_t p = 0; p < 16; ++p) {
        const int64_t j = c0 + u * kKeyStep + 2 * p;
        const auto value_bits = [&](int64_t key) {
          if (key < g0 || key >= c1) return _mm512_setzero_si512();
          return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s.v_rows[key - c0] + b * kDimBlock * 2));
        };
        r[p] = _mm512_or_si512(value_bits(j), _mm512_slli_epi32(value_bits(j + 1), 16));
      }
      transpose16(r);
      for (int d = 0; d < 16; ++d) store_tile_row(s.vt[u][b], d, r[d]);
    }
}

// Q^T halves of rows [i0, i0 + n): word (row, p) = dims 2p, 2p + 1 of a step, transposed to rows p.
void pack_queries(const FlashSplitArgs& a, int64_t i0, int64_t n, int64_t dim_steps, FlashScratch& s) {
  const int64_t hd = a.head_dim;
  for (int64_t st = 0; st < dim_steps; ++st) {
    const int64_t d0 = st * kDimStep;
    const __mmask16 m0 = VecAvx512::tail_mask(hd - d0), m1 = VecAvx512::tail_mask(std::max<int64_t>(hd - d0 - 16, 0));
    __m512i hi[16], lo[16];
    for (int64_t r = 0; r < 16; ++r) {
      if (r >= n) {
        hi[r] = lo[r] = _mm512_setzero_si512();
        continue;
      }
      const float* q = query_row(a, i0 + r) + d0;
      __m512i h0, l0, h1, l1;
      bf16_halves(_mm512_maskz_loadu_ps(m0, q), h0, l0);
      bf16_halves(_mm512_maskz_loadu_ps(m1, q + 16), h1, l1);
      hi[r] = pack_pairs(h0, h1);
      lo[r] = pack_pairs(l0, l1);
    }
    transpose16(hi);
    transpose16(lo);
    for (int p = 0; p < 16; ++p) store_tile_row(s.qt[0][st], p, lo[p]), store_tile_row(s.qt[1][st], p, hi[p]);
  }
}

// Scores of key tiles [t0, t1) for the packed row tile into s.st (two tiles at a time: C 0-1,
// A 2-3, B lo 4, B hi 5).
template <class Tiles>
void score_tiles(Tiles& tiles, int64_t t0, int64_t t1, int64_t dim_steps, FlashScratch& s) {
  for (int64_t t = t0; t < t1; t += 2) {
    const bool pair = t + 1 < t1;
    tiles.template zero<0>();
    if (pair) tiles.template zero<1>();
    for (int64_t st = 0; st < dim_steps; ++st) {
      tiles.template load<4>(&s.qt[0][st], 64);
      tiles.template load<5>(&s.qt[1][st], 64);
      tiles.template load<2>(s.k_tile[t] + st * s.k_step[t], s.k_stride[t]);
      tiles.template dpbf16ps<0, 2, 4>();
      tiles.template dpbf16ps<0, 2, 5>();
      if (pair) {
        tiles.template load<3>(s.k_tile[t + 1] + st * s.k_step[t + 1], s.k_stride[t + 1]);
        tiles.template dpbf16ps<1, 3, 4>();
        tiles.template dpbf16ps<1, 3, 5>();
      }
    }
    tiles.template store<0>(s.st[t * kKeyTile], 64);
    if (pair) tiles.template store<1>(s.st[(t + 1) * kKeyTile], 64);
  }
}

// O^T blocks [b0, b0 + NB) += V^T . P^T over key steps [u0, u1): C 0..NB-1, A 4 / 7, B lo 5, B hi 6.
template <class Tiles, int NB>
void value_blocks(Tiles& tiles, int64_t b0, int64_t u0, int64_t u1, FlashScratch& s) {
  static_assert(NB >= 1 && NB <= 4);
  const auto each = [&]<int... J>(std::integer_sequence<int, J...>, auto&& f) { (f.template operator()<J>(), ...); };
  const auto blocks = std::make_integer_sequence<int, NB>{};
  each(blocks, [&]<int J>() { tiles.template load<J>(s.ot[(b0 + J) * kDimBlock], 64); });
  for (int64_t u = u0; u < u1; ++u) {
    tiles.template load<5>(&s.pt[0][u], 64);
    tiles.template load<6>(&s.pt[1][u], 64);
    each(blocks, [&]<int J>() {
      constexpr int A = J % 2 == 0 ? 4 : 7;
      tiles.template load<A>(&s.vt[u][b0 + J], 64);
      tiles.template dpbf16ps<J, A, 5>();
      tiles.template dpbf16ps<J, A, 6>();
    });
  }
  each(blocks, [&]<int J>() { tiles.template store<J>(s.ot[(b0 + J) * kDimBlock], 64); });
}

// One row tile (rows [i0, i0 + n)) over the prepared chunk: partial rows in, online softmax step,
// partial rows out.
template <class Tiles>
void update_row_tile(const FlashSplitArgs& a, Tiles& tiles, int64_t i0, int64_t n, int64_t c0, int64_t g0, int64_t c1,
                     int64_t dim_steps, FlashScratch& s) {
  // Which keys each lane (row) sees; padded lanes see none.
  alignas(64) int32_t lo[16], hi[16];
  int64_t first = c1, last = g0;
  for (int64_t r = 0; r < 16; ++r) {
    lo[r] = 1, hi[r] = 0;
    if (r >= n) continue;
    const auto [l, h] = visible_keys(a, i0 + r, g0, c1);
    if (l >= h) continue;
    lo[r] = static_cast<int32_t>(l - c0), hi[r] = static_cast<int32_t>(h - c0);
    first = std::min(first, l), last = std::max(last, h);
  }
  if (first >= last) return;  // no row of the tile sees the chunk
  const int64_t t0 = (first - c0) / kKeyTile, t1 = (last - c0 + kKeyTile - 1) / kKeyTile;
  pack_queries(a, i0, n, dim_steps, s);
  score_tiles(tiles, t0, t1, dim_steps, s);

  const float* part0 = a.partial;
  const int64_t ps = a.head_dim + 2;
  alignas(64) float m_old[16], sum_old[16];
  for (int64_t r = 0; r < 16; ++r) {
    m_old[r] = r < n ? part0[(i0 + r) * ps] : kFlashNegInf;
    sum_old[r] = r < n ? part0[(i0 + r) * ps + 1] : 0.0f;
  }
  const __m512i lo_v = _mm512_load_si512(lo), hi_v = _mm512_load_si512(hi);
  const __m512 scale = _mm512_set1_ps(a.scale), neg_inf = _mm512_set1_ps(kFlashNegInf);
  const auto visible = [&](int64_t key) {
    const __m512i k = _mm512_set1_epi32(static_cast<int32_t>(key));
    return static_cast<__mmask16>(_mm512_cmpge_epi32_mask(k, lo_v) & _mm512_cmplt_epi32_mask(k, hi_v));
  };
  __m512 vmax = neg_inf;
  for (int64_t j = t0 * kKeyTile; j < t1 * kKeyTile; ++j) {
    const __m512 score = _mm512_mask_mul_ps(neg_inf, visible(j), _mm512_load_ps(s.st[j]), scale);
    _mm512_store_ps(s.st[j], score);
    vmax = _mm512_max_ps(vmax, score);
  }
  const __m512 mo = _mm512_load_ps(m_old);
  const __m512 m_new = _mm512_max_ps(mo, vmax);
  const __mmask16 moved = _mm512_cmp_ps_mask(m_new, mo, _CMP_NEQ_UQ);
  // Rescale only where the max moved (exp(m_old - m_new): 0 on a row's first keys).
  const __m512 alpha = _mm512_mask_blend_ps(moved, _mm512_set1_ps(1.0f), VecAvx512::exp(_mm512_sub_ps(mo, m_new)));
  const int64_t u0 = t0 * kKeyTile / kKeyStep, u1 = (t1 * kKeyTile + kKeyStep - 1) / kKeyStep;
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t u = u0; u < u1; ++u)
    for (int64_t p = 0; p < 16; ++p) {
      __m512i h[2], l[2];
      for (int e = 0; e < 2; ++e) {
        const int64_t j = u * kKeyStep + 2 * p + e;
        const bool scored = j >= t0 * kKeyTile && j < t1 * kKeyTile;
        const __m512 w = scored ? _mm512_maskz_mov_ps(visible(j), VecAvx512::exp(_mm512_sub_ps(_mm512_load_ps(s.st[j]), m_new)))
                                : _mm512_setzero_ps();
        vsum = _mm512_add_ps(vsum, w);
        bf16_halves(w, h[e], l[e]);
      }
      store_tile_row(s.pt[0][u], p, _mm512_or_si512(l[0], _mm512_slli_epi32(l[1], 16)));
      store_tile_row(s.pt[1][u], p, _mm512_or_si512(h[0], _mm512_slli_epi32(h[1], 16)));
    }
  alignas(64) float m_out[16], sum_out[16];
  _mm512_store_ps(m_out, m_new);
  _mm512_store_ps(sum_out, _mm512_add_ps(_mm512_mul_ps(_mm512_load_ps(sum_old), alpha), vsum));

  // Running outputs in, rescaled, + V^T . P^T, out.
  const int64_t hd = a.head_dim, blocks = (hd + kDimBlock - 1) / kDimBlock;
  for (int64_t b = 0; b < blocks; ++b) {
    const __mmask16 dims = VecAvx512::tail_mask(hd - b * kDimBlock);
    __m512i r[16];
    for (int64_t i = 0; i < 16; ++i)
      r[i] = i < n ? _mm512_maskz_loadu_epi32(dims, part0 + (i0 + i) * ps + 2 + b * kDimBlock) : _mm512_setzero_si512();
    transpose16(r);
    for (int64_t d = 0; d < 16; ++d)
      _mm512_store_ps(s.ot[b * kDimBlock + d], _mm512_mul_ps(_mm512_castsi512_ps(r[d]), alpha));
  }
  for (int64_t b = 0; b < blocks; b += 4) {
    switch (std::min<int64_t>(4, blocks - b)) {
      case 1: value_blocks<Tiles, 1>(tiles, b, u0, u1, s); break;
      case 2: value_blocks<Tiles, 2>(tiles, b, u0, u1, s); break;
      case 3: value_blocks<Tiles, 3>(tiles, b, u0, u1, s); break;
      default: value_blocks<Tiles, 4>(tiles, b, u0, u1, s); break;
    }
  }
  float* part = a.partial;
  for (int64_t b = 0; b < blocks; ++b) {
    const __mmask16 dims = VecAvx512::tail_mask(hd - b * kDimBlock);
    __m512i r[16];
    for (int64_t d = 0; d < 16; ++d) r[d] = _mm512_castps_si512(_mm512_load_ps(s.ot[b * kDimBlock + d]));
    transpose16(r);
    for (int64_t i = 0; i < n; ++i) _mm512_mask_storeu_epi32(part + (i0 + i) * ps + 2 + b * kDimBlock, dims, r[i]);
  }
  for (int64_t i = 0; i < n; ++i) part[(i0 + i) * ps] = m_out[i], part[(i0 + i) * ps + 1] = sum_out[i];
}

// The split for a bf16 cache with head_dim <= kFlashMaxHeadDim.
template <class Tiles>
void flash_split_bf16(const FlashSplitArgs& a) {
  if (a.scratch == nullptr) return run_with_own_scratch(a, flash_split_bf16<Tiles>);
  FlashScratch& s = scratch_as<FlashScratch>(*a.scratch);
  const int64_t rows = a.num_rows * a.group, ps = a.head_dim + 2;
  for (int64_t i = 0; i < rows; ++i) {
    a.partial[i * ps] = kFlashNegInf;
    std::fill(a.partial + i * ps + 1, a.partial + (i + 1) * ps, 0.0f);
  }
  if (rows == 0) return;
  const int64_t first_key = std::max(
      a.key_begin, a.sliding_window > 0 ? a.first_position - a.sliding_window + 1 : int64_t{0});
  const int64_t dim_steps = (a.head_dim + kDimStep - 1) / kDimStep;
  Tiles tiles;
  tiles.configure(full_tile_config());
  for (int64_t c0 = a.key_begin + (first_key - a.key_begin) / kFlashChunk * kFlashChunk; c0 < a.key_end;
       c0 += kFlashChunk) {
    const int64_t g0 = std::max(c0, first_key), c1 = std::min(c0 + kFlashChunk, a.key_end);
    if (g0 >= c1) continue;
    prepare_chunk(a, c0, g0, c1, dim_steps, s);
    for (int64_t i0 = 0; i0 < rows; i0 += 16)
      update_row_tile(a, tiles, i0, std::min<int64_t>(16, rows - i0), c0, g0, c1, dim_steps, s);
  }
  tiles.release();
}

}  // namespace
}  // namespace lemma::kernels::x86::amx
