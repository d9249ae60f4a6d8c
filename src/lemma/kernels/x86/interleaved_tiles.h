// Pieces the interleaved-weight kernels share (interleaved_blocks.h), whatever their ISA: the 16-row
// groups' first superblocks, W's stream prefetch (in one burst or spread over a superblock's work),
// the K-quants' quarter passes, x's 4-code broadcasts, the tile walks, the store of a register
// tile's outputs (+ bias) over a vector layer V (x86/vec/) and the K-quant tile around them.
// Included only by per-ISA sources; `static inline` keeps each copy local to its object file (see
// horizontal_sum.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul_args.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86 {

// Groups g0 .. g0 + G - 1 of W, each `blocks` superblocks of `super_bytes`.
template <int G>
static inline void group_starts(const MatmulArgs& a, int64_t g0, int64_t blocks, int64_t super_bytes, const uint8_t* group[G]) {
  for (int g = 0; g < G; ++g) group[g] = static_cast<const uint8_t*>(a.w) + (g0 + g) * blocks * super_bytes;
}

// Software prefetch of W for the interleaved kernels: each group of 16 rows is one forward stream,
// prefetched ahead of the bytes being read, by a distance that depends on how many streams a
// register tile reads at once. A tile of several groups (prefill, bf16 decode) reads several
// streams, each prefetched 1 KiB ahead (into L1; much farther, past L1, was slower). A tile of one
// group walks a thread's rows as one contiguous stream, since groups lie one after the other, and
// prefetches 8 KiB ahead; past a group's end that reaches into the next group, which the next tile
// reads. (The int8 decode GEMVs prefetch into L2 instead, below.)
constexpr int64_t kStreamPrefetchBytes = 1024;
constexpr int64_t kOneStreamPrefetchBytes = 8192;
template <int Streams>
static inline void prefetch_stream(const void* reading, int64_t bytes) {
  constexpr int64_t kAhead = Streams == 1 ? kOneStreamPrefetchBytes : kStreamPrefetchBytes;
  const char* ahead = static_cast<const char*>(reading) + kAhead;
  for (int64_t line = 0; line < bytes; line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
}

// The int8 decode kernels' one stream per thread (Q8_0x16 / Q4_0x16 / ... GEMV, matmul_interleaved_vnni.cpp):
// into L2 (T1), 4 KiB ahead: faster from DRAM than none, and than T0 (which competes with the
// kernel's own loads for L1) or T1 much farther ahead.
constexpr int64_t kDecodeStreamPrefetchBytes = 4096;
static inline void prefetch_decode_stream(const void* reading, int64_t bytes) {
  const char* ahead = static_cast<const char*>(reading) + kDecodeStreamPrefetchBytes;
  for (int64_t line = 0; line < bytes; line += 64) _mm_prefetch(ahead + line, _MM_HINT_T1);
}

// The same prefetch spread over a superblock's work: part `step` of `Steps` of its lines, so the
// core never issues more prefetches at once than its miss buffers take. The K-quant superblocks
// are 36 (Q4_Kx16) to 53 (Q6_Kx16) lines; issued in one burst, the core stalled until most had
// arrived and compute stopped overlapping memory (the small Q8_0x16 / Q4_0x16 superblocks, 9 and 5
// lines, do not care). One stream (the K-quant decode GEMVs) goes into L2 (T1) 4 KiB ahead like
// prefetch_decode_stream; several streams keep T0 1 KiB ahead.
template <int Streams, int Steps>
static inline void prefetch_stream_part(const void* reading, int64_t bytes, int step) {
  constexpr bool kOneStream = Streams == 1;
  constexpr int64_t kAhead = kOneStream ? kDecodeStreamPrefetchBytes : kStreamPrefetchBytes;
  const char* ahead = static_cast<const char*>(reading) + kAhead;
  const int64_t lines = (bytes + 63) / 64;
  for (int64_t line = lines * step / Steps; line < lines * (step + 1) / Steps; ++line) {
    if constexpr (kOneStream) {
      _mm_prefetch(ahead + 64 * line, _MM_HINT_T1);
    } else {
      _mm_prefetch(ahead + 64 * line, _MM_HINT_T0);
    }
  }
}

// The four passes over a 16-value-scaled K-quant superblock (Q2_K, Q3_K, Q6_K) in order: half H of
// the codes, values 4 p .. 4 p + 3 of each of its 32-value chunks with p / 4 == Q.
template <class Pass>
static inline void for_each_quarter(Pass&& pass) {
  pass.template operator()<0, 0>();
  pass.template operator()<0, 1>();
  pass.template operator()<1, 0>();
  pass.template operator()<1, 1>();
}

// Q2_K / Q3_K's scales of sub-blocks 8 H + 2 f + Q (f = 0..3, one quarter pass) from their scale
// vectors lo = sc[2 H] and hi = sc[2 H + 1]: byte (2 f + Q) % 4 of each 32-bit lane, Q3_K's as a
// signed byte (already minus 32), Q2_K's low nibble (its min is the high one).
template <class V, bool kQ3, int Q>
static inline void q23k_scales(typename V::I lo, typename V::I hi, typename V::I (&scale)[4]) {
  const auto pick = [&]<int J>(typename V::I v) {
    if constexpr (kQ3) {
      return V::template signed_byte<J>(v);
    } else {
      return V::and_i32(V::template shift_right_i32<8 * J>(v), V::set1_i32(0x0F));
    }
  };
  scale[0] = pick.template operator()<Q>(lo);
  scale[1] = pick.template operator()<2 + Q>(lo);
  scale[2] = pick.template operator()<Q>(hi);
  scale[3] = pick.template operator()<2 + Q>(hi);
}

// 4 signed codes of x as one int32 (for a broadcast vpdpbusd operand).
static inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// A register tile's shape: rows of x by 16-row groups of W.
struct TileShape {
  int rows, groups;
};

// Runs tile.template operator()<R, G>(m0, g0) over every row of x and 16-row group of W, in tiles of
// up to kDecode's shape while M <= kDecodeRows (decode: the tiles that keep W's reads one stream),
// else of kPrefill's.
template <int kDecodeRows, TileShape kDecode, TileShape kPrefill, class Tile>
static inline void for_each_group_tile(const MatmulArgs& a, Tile&& tile) {
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  if (a.M <= kDecodeRows) {
    for_each_tile<kDecode.rows, kDecode.groups>(a.M, groups, tile);
  } else {
    for_each_tile<kPrefill.rows, kPrefill.groups>(a.M, groups, tile);
  }
}

// The float interleaved kernels' walk (bf16x16, f16x16): blocks of groups (about 256 KiB of W,
// `group_bytes` per group, staying in L2) outer, rows of x in tiles of MaxR, groups in tiles of MaxG,
// remainders as smaller tiles: tile.template operator()<R, G>(m0, g0, next_block), next_block = the
// groups from this block's start to the next block's (0 in the last block).
template <int MaxR, int MaxG, class Tile>
static inline void for_each_blocked_tile(const MatmulArgs& a, int64_t group_bytes, Tile&& tile) {
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  const int64_t tiles_per_block = (int64_t{256} << 10) / group_bytes / MaxG;
  const int64_t block = (tiles_per_block > 1 ? tiles_per_block : 1) * MaxG;  // groups
  for (int64_t b0 = 0; b0 < groups; b0 += block) {
    const int64_t b1 = b0 + block < groups ? b0 + block : groups;
    const int64_t next_block = b1 < groups ? block : 0;
    for (int64_t m0 = 0; m0 < a.M; m0 += MaxR) {
      with_count<MaxR>(a.M - m0 < MaxR ? a.M - m0 : MaxR, [&]<int R>() {
        for (int64_t g0 = b0; g0 < b1; g0 += MaxG) {
          with_count<MaxG>(b1 - g0 < MaxG ? b1 - g0 : MaxG, [&]<int G>() { tile.template operator()<R, G>(m0, g0, next_block); });
        }
      });
    }
  }
}

// Outputs of group g for rows m0 .. m0 + R - 1 of x (+ bias, one add), cut at N: out(r, h) is row
// r's h-th vector of the group's 16 outputs (16 / V::kWidth of them).
template <class V, int R, class Out>
static inline void store_group(const MatmulArgs& a, int64_t m0, int64_t g, Out&& out) {
  const int64_t n0 = g * kInterleaveRows;
  const int64_t valid = a.N - n0 < kInterleaveRows ? a.N - n0 : kInterleaveRows;
  for (int h = 0; h < kInterleaveRows / V::kWidth && V::kWidth * h < valid; ++h) {
    const int64_t n = n0 + V::kWidth * h, count = valid - V::kWidth * h;
    const typename V::F bias = a.bias != nullptr ? V::load_first(a.bias + n, count) : V::zero();
    for (int r = 0; r < R; ++r) {
      const typename V::F y = a.bias != nullptr ? V::add(out(r, h), bias) : out(r, h);
      V::store_first(a.y + (m0 + r) * a.y_stride + n, y, count);
    }
  }
}

// Part h of a group's outputs held as one vector (AVX-512) or as 16 / kWidth of them.
template <class V>
static inline typename V::F group_part(typename V::F outputs, int) {
  return outputs;
}
template <class V, size_t N>
static inline typename V::F group_part(const typename V::F (&outputs)[N], int h) {
  return outputs[h];
}

// store_group for groups g0 .. g0 + G - 1: acc[r][g] holds row r's outputs of group g0 + g.
template <class V, int R, int G, class Acc>
static inline void store_tile(const MatmulArgs& a, int64_t m0, int64_t g0, const Acc (&acc)[R][G]) {
  for (int g = 0; g < G; ++g) store_group<V, R>(a, m0, g0 + g, [&](int r, int h) { return group_part<V>(acc[r][g], h); });
}

// The K-quant x16 kernels' register tile over Q8_K-style x (q8k_activations.h): rows m0 .. m0 + R - 1
// of x by groups g0 .. g0 + G - 1 of W (superblocks of super_bytes, walked in step); per 256-value
// block b, block(b, group, x, acc) adds superblock b of every group to the accumulators acc[r][g],
// zeroed here and stored with their bias at the end.
template <class V, int R, int G, class Block>
static inline void kquant_group_tile(const MatmulArgs& a, int64_t m0, int64_t g0, int64_t super_bytes, Block&& block) {
  const int64_t blocks = a.K / kQ8KBlock;
  const uint8_t* group[G];
  group_starts<G>(a, g0, blocks, super_bytes, group);
  const Q8kRows<R> x(a.xq, a.K, m0);
  typename V::F acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = V::zero();
  for (int64_t b = 0; b < blocks; ++b) block(b, group, x, acc);
  store_tile<V, R, G>(a, m0, g0, acc);
}

}  // namespace lemma::kernels::x86
