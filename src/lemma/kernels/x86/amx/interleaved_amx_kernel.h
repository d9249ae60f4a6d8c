// The AMX-INT8 kernel for interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / Q4_1x16 / Q5_1x16 / IQ4_NLx16 /
// IQ4_XSx16 weights x signed int8 activations
// (interleaved_blocks.h), written once over a tile backend: HardwareTiles (tiles_hardware.h) or
// TileEmulator (tile_emulator.h). Per 16 rows of x, group of 16 W rows and 32-value block b:
//   A = x's codes of the block (16 rows x 32 bytes, read in place from the activation buffer),
//   B = the block's 8 chunks (8 rows x 64 bytes: row j = values 4j..4j+3 of the 16 W rows; the
//       superblock's Q8_0 bytes as they are, Q4_0/Q5_0 nibbles (+ fifth bit) unpacked into a stage),
//   C = A x B with TDPBSUD (x signed, codes unsigned u = q + 2^shift): C = S_b + 2^shift * sum(x_b),
//   so S_b = C - 2^shift * (x's block code sum) exactly, then, per output, the oracle's step
//   acc = fma(d_w * d_x, float(S_b), acc), blocks in order (Q4_1 / Q5_1: u as it is, S_b = C, then
//   acc = fma(m_w * d_x, float(x's block code sum), acc); IQ4: B holds table value + 128). S_b is exact, so every output has
//   the reference's bits whatever M is and wherever its row or group falls (batch invariant).
// Two groups per step (two C tiles in flight, one A). M % 16 rows run on tiles configured with that
// many rows, so x is never copied or padded. K runs in chunks of kChunkBlocks: each chunk's B
// stages and scales are prepared once and reused by every 16-row tile of x; between chunks an
// output's f32 sum waits (exactly) in y. Allocates nothing (about 24 KiB of stack).
// Internal linkage: included by the hardware and the emulated kernel's sources only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul_args.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/kernels/x86/amx/tile_config.h"

namespace lemma::kernels::x86::amx {
namespace {

constexpr int64_t kBlock = 32;        // values per block of W and x
constexpr int64_t kChunkBlocks = 16;  // blocks of K staged at once (16 KiB of B stages for 2 groups)
constexpr int64_t kBBytes = 8 * 64;   // one block's B tile

// Tiles: full 16-row tiles of x, and tiles for the last M % 16 rows.
constexpr int kC0 = 0, kC1 = 1, kA = 2, kB0 = 3, kB1 = 4, kTailC0 = 5, kTailC1 = 6, kTailA = 7;

inline TileConfig kernel_tile_config(int64_t tail_rows) {
  TileConfig config;
  const auto set = [&](int t, int64_t rows, int colsb) {
    config.rows[t] = static_cast<uint8_t>(rows);
    config.colsb[t] = static_cast<uint16_t>(rows != 0 ? colsb : 0);
  };
  set(kC0, 16, 64), set(kC1, 16, 64), set(kA, 16, 32), set(kB0, 8, 64), set(kB1, 8, 64);
  set(kTailC0, tail_rows, 64), set(kTailC1, tail_rows, 64), set(kTailA, tail_rows, 32);
  return config;
}

// Q4_0/Q5_0: B row p / p + 4 = the low / high nibbles of chunk p (values 4p.. / 16 + 4p..).
inline void unpack_nibbles(const uint8_t* chunks, uint8_t* b) {
  constexpr uint64_t kLow = 0x0F0F0F0F0F0F0F0Full;
  for (int64_t word = 0; word < 4 * 64 / 8; ++word) {
    uint64_t v;
    std::memcpy(&v, chunks + 8 * word, 8);
    const uint64_t lo = v & kLow, hi = (v >> 4) & kLow;
    const int64_t p = word / 8, at = 8 * (word % 8);
    std::memcpy(b + 64 * p + at, &lo, 8);
    std::memcpy(b + 64 * (p + 4) + at, &hi, 8);
  }
}

// 8 bits -> 8 bytes of 0x10 or 0 (bit i -> byte i): Q5_0's fifth bits, 8 at a time.
struct FifthBits {
  uint64_t bytes[256];
  constexpr FifthBits() : bytes() {
    for (int v = 0; v < 256; ++v)
      for (int i = 0; i < 8; ++i)
        if ((v >> i) & 1) bytes[v] |= uint64_t{0x10} << (8 * i);
  }
};
constexpr FifthBits kFifthBits;

// Formats whose superblock is one 32-value block: f16 scales first (row j at 2 j), codes at kCodesAt,
// (kMins) f16 mins at 32.
template <int64_t SuperBytes, int64_t CodesAt, bool Mins = false>
struct OneBlock {
  static constexpr int64_t kBlockBytes = SuperBytes;  // a group's bytes per 32-value block
  static constexpr bool kMins = Mins;
  static const uint8_t* codes(const uint8_t* group, int64_t b) { return group + b * SuperBytes + CodesAt; }
  static float f16_at(const uint8_t* p) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return f16_to_f32(bits);
  }
  static float scale(const uint8_t* group, int64_t b, int j) { return f16_at(group + b * SuperBytes + 2 * j); }
  static float min(const uint8_t* group, int64_t b, int j) { return f16_at(group + b * SuperBytes + 32 + 2 * j); }
};

// The weight formats: where a block's codes and scales are, code offset u = q + 2^kShift (none with
// kMins), and B of one block.
struct Q8Codes : OneBlock<16 * 34, 32> {
  static constexpr int kShift = 7;
  static const uint8_t* b_rows(const uint8_t* chunks, uint8_t*) { return chunks; }  // already B
};
template <int64_t SuperBytes, int64_t CodesAt, bool Mins>
struct NibbleCodes : OneBlock<SuperBytes, CodesAt, Mins> {
  static constexpr int kShift = Mins ? 0 : 3;
  static const uint8_t* b_rows(const uint8_t* chunks, uint8_t* stage) {
    unpack_nibbles(chunks, stage);
    return stage;
  }
};
using Q4Codes = NibbleCodes<16 * 18, 32, false>;
using Q41Codes = NibbleCodes<16 * 20, 64, true>;
// IQ4_NL: the nibbles turned into table value + 128 while staging.
struct Iq4NLCodes : OneBlock<16 * 18, 32> {
  static constexpr int kShift = 7;
  static const uint8_t* b_rows(const uint8_t* chunks, uint8_t* stage) {
    unpack_nibbles(chunks, stage);
    for (int64_t i = 0; i < kBBytes; ++i) stage[i] = kIq4UnsignedCodes[stage[i]];
    return stage;
  }
};
// IQ4_XS: IQ4_NL's codes, 8 blocks per superblock, scale f32(d) * (ls - 32) per block.
struct Iq4XSCodes : Iq4NLCodes {
  using L = Iq4XsX16Layout;
  static constexpr int64_t kBlockBytes = L::kSuperBytes / 8;
  static const uint8_t* codes(const uint8_t* group, int64_t b) {
    return group + b / 8 * L::kSuperBytes + L::kCodesAt + L::kSubBlockBytes * (b % 8);
  }
  static float scale(const uint8_t* group, int64_t b, int j) {
    const uint8_t* super = group + b / 8 * L::kSuperBytes;
    uint16_t scales_h;
    std::memcpy(&scales_h, super + L::kScalesHighAt + 2 * j, 2);
    return f16_at(super + 2 * j) * static_cast<float>(iq4_xs_scale(scales_h, super + L::kScalesLowAt + 4 * j, static_cast<int>(b % 8)));
  }
};
template <int64_t SuperBytes, int64_t CodesAt, bool Mins>
struct FifthBitCodes : OneBlock<SuperBytes, CodesAt, Mins> {
  static constexpr int kShift = Mins ? 0 : 4;
  static const uint8_t* b_rows(const uint8_t* chunks, uint8_t* stage) {
    unpack_nibbles(chunks, stage);
    const uint8_t* masks = chunks + 4 * 64;  // mask j, bit 4i + t: fifth bit of row i's value 4j + t
    for (int64_t j = 0; j < 8; ++j) {
      for (int64_t byte = 0; byte < 8; ++byte) {
        uint64_t v;
        std::memcpy(&v, stage + 64 * j + 8 * byte, 8);
        v |= kFifthBits.bytes[masks[8 * j + byte]];
        std::memcpy(stage + 64 * j + 8 * byte, &v, 8);
      }
    }
    return stage;
  }
};
using Q5Codes = FifthBitCodes<16 * 22, 32, false>;
using Q51Codes = FifthBitCodes<16 * 24, 64, true>;

// One chunk of K for G (1 or 2) groups: where each block's B tile is, and its 16 scales in f32.
template <int G>
struct Chunk {
  alignas(64) uint8_t stage[G][kChunkBlocks][kBBytes];
  alignas(64) float dw[G][kChunkBlocks][16];
  alignas(64) float mw[G][kChunkBlocks][16];  // Q4_1 / Q5_1's mins
  const uint8_t* b[G][kChunkBlocks];
  int64_t first = 0, count = 0;  // blocks [first, first + count)
};

template <class W, int G>
void stage_chunk(const MatmulArgs& a, int64_t g0, int64_t first, Chunk<G>& chunk) {
  const int64_t blocks = a.K / kBlock;
  chunk.first = first;
  chunk.count = std::min(kChunkBlocks, blocks - first);
  for (int g = 0; g < G; ++g) {
    const auto* group = static_cast<const uint8_t*>(a.w) + (g0 + g) * blocks * W::kBlockBytes;
    for (int64_t b = 0; b < chunk.count; ++b) {
      chunk.b[g][b] = W::b_rows(W::codes(group, first + b), chunk.stage[g][b]);
      for (int j = 0; j < 16; ++j) {
        chunk.dw[g][b][j] = W::scale(group, first + b, j);
        if constexpr (W::kMins) chunk.mw[g][b][j] = W::min(group, first + b, j);
      }
    }
  }
}

// Rows m0 .. m0 + R - 1 of x (R = 16 on tiles kC*/kA, fewer on the tail tiles) x one chunk x G groups.
template <class Tiles, class W, int G, bool Tail>
void run_chunk(const MatmulArgs& a, Tiles& tiles, int64_t g0, int64_t m0, int64_t R, const Chunk<G>& chunk) {
  constexpr int TC0 = Tail ? kTailC0 : kC0, TC1 = Tail ? kTailC1 : kC1, TA = Tail ? kTailA : kA;
  const int64_t blocks = a.K / kBlock;
  const bool first = chunk.first == 0, last = chunk.first + chunk.count == blocks;
  // acc[g][r][j]: output (m0 + r, 16 (g0 + g) + j); between chunks it waits in y.
  alignas(64) float acc[G][16][16];
  for (int g = 0; g < G; ++g) {
    const int64_t n0 = (g0 + g) * kInterleaveRows;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < 16; ++j)
        acc[g][r][j] = !first && n0 + j < a.N ? a.y[(m0 + r) * a.y_stride + n0 + j] : 0.0f;
  }
  const int64_t codes_stride = int8_signed_row_bytes(a.K);  // x's rows, one after the other
  const int8_t* x = int8_signed_codes(a.xq, a.K, m0);
  alignas(64) int32_t c[G][16][16];
  for (int64_t b = 0; b < chunk.count; ++b) {
    const int64_t block = chunk.first + b;
    tiles.template load<TA>(x + block * kBlock, codes_stride);
    tiles.template load<kB0>(chunk.b[0][b], 64);
    tiles.template zero<TC0>();
    tiles.template dpbsud<TC0, TA, kB0>();
    if constexpr (G == 2) {
      tiles.template load<kB1>(chunk.b[1][b], 64);
      tiles.template zero<TC1>();
      tiles.template dpbsud<TC1, TA, kB1>();
    }
    tiles.template store<TC0>(c[0], 64);
    if constexpr (G == 2) tiles.template store<TC1>(c[1], 64);
    for (int64_t r = 0; r < R; ++r) {
      const float dx = int8_signed_scales(a.xq, a.K, m0 + r)[block];
      const int32_t xsum = int8_block_sums(a.xq, a.K, m0 + r)[block];
      const int32_t offset = W::kMins ? 0 : xsum * (1 << W::kShift);
      for (int g = 0; g < G; ++g)
        for (int j = 0; j < 16; ++j) {
          acc[g][r][j] = std::fma(chunk.dw[g][b][j] * dx, static_cast<float>(c[g][r][j] - offset), acc[g][r][j]);
          if constexpr (W::kMins) acc[g][r][j] = std::fma(chunk.mw[g][b][j] * dx, static_cast<float>(xsum), acc[g][r][j]);
        }
    }
  }
  for (int g = 0; g < G; ++g) {
    const int64_t n0 = (g0 + g) * kInterleaveRows;
    const int64_t valid = std::min<int64_t>(kInterleaveRows, a.N - n0);
    for (int64_t r = 0; r < R; ++r) {
      float* y = a.y + (m0 + r) * a.y_stride + n0;
      for (int64_t j = 0; j < valid; ++j) y[j] = last && a.bias != nullptr ? acc[g][r][j] + a.bias[n0 + j] : acc[g][r][j];
    }
  }
}

template <class Tiles, class W, int G>
void run_groups(const MatmulArgs& a, Tiles& tiles, int64_t g0) {
  Chunk<G> chunk;
  const int64_t full_rows = a.M / 16 * 16;
  int64_t first = 0;
  do {  // at least once: K = 0 still writes y = 0 (+ bias)
    stage_chunk<W, G>(a, g0, first, chunk);
    for (int64_t m0 = 0; m0 < full_rows; m0 += 16) run_chunk<Tiles, W, G, false>(a, tiles, g0, m0, 16, chunk);
    if (full_rows < a.M) run_chunk<Tiles, W, G, true>(a, tiles, g0, full_rows, a.M - full_rows, chunk);
    first += kChunkBlocks;
  } while (first < a.K / kBlock);
}

// y = x . W^T (+ bias) for interleaved W in format W, on the tiles of `Tiles`.
template <class Tiles, class W>
void matmul_interleaved(const MatmulArgs& a) {
  if (a.M == 0 || a.N == 0) return;
  Tiles tiles;
  tiles.configure(kernel_tile_config(a.M % 16));
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  for (int64_t g0 = 0; g0 < groups; g0 += 2) {
    if (groups - g0 >= 2) {
      run_groups<Tiles, W, 2>(a, tiles, g0);
    } else {
      run_groups<Tiles, W, 1>(a, tiles, g0);
    }
  }
  tiles.release();
}

}  // namespace
}  // namespace lemma::kernels::x86::amx
