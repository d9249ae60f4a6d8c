// The AMX-INT8 kernel for interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / Q4_1x16 / Q5_1x16 / IQ4_NLx16 /
// IQ4_XSx16 weights x signed int8 activations (interleaved_blocks.h), written once over a tile
// backend (HardwareTiles, tiles_hardware.h, or TileEmulator, tile_emulator.h) and an f32 backend
// for the scale step (Avx512Lanes, lanes_avx512.h, or ScalarLanes, lanes_scalar.h). Per 16 rows of
// x, group of 16 W rows and 32-value block b:
//   A = x's codes of the block (16 rows x 32 bytes, read in place; the last M % 16 rows copied into
//       a zero-padded tile),
//   B = the block's 8 chunks (8 rows x 64 bytes: row j = values 4j..4j+3 of the 16 W rows) staged
//       as signed codes q = u - 2^shift (Q8_0: the bytes ^ 0x80; Q4_0/Q5_0 nibbles (+ fifth bit)
//       unpacked; IQ4: table values; Q4_1/Q5_1: u as it is),
//   C = A x B with TDPBSSD = S_b exactly, then, per output, the oracle's step
//   acc = fma(d_w * d_x, float(S_b), acc), blocks in order (Q4_1 / Q5_1 then
//   acc = fma(m_w * d_x, float(x's block code sum), acc)). S_b is exact, so every output has the
//   reference's bits (and the VNNI kernels') whatever M is and wherever its row or group falls
//   (batch invariant).
// What bounds it on Sapphire Rapids (README.md): per block and 16 x 16 outputs one TILESTORED (which
// competes with the f32 step for the vector ports) and 16 x (convert, multiply, FMA). So the f32
// sums of a row tile live in 16 registers for a whole chunk, C tiles rotate four deep so that a
// product is never stored right after it was issued, and the staged B is signed so that the step
// needs no offset subtraction. The staged panel (320 KiB, the same for every format) lives in the
// caller's scratch (MatmulArgs::scratch): no allocation once that has grown; about 25 KiB of stack.
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
#include "lemma/kernels/x86/amx/scratch_as.h"
#include "lemma/kernels/x86/amx/tile_config.h"

namespace lemma::kernels::x86::amx {
namespace {

constexpr int64_t kBlock = 32;         // values per block of W and x
// A panel of W (kPanelGroups groups x kChunkBlocks blocks: 256 KiB of B tiles) is staged once and
// stays in L2 while every 16-row tile of x passes; larger panels and chunks amortise a row tile's
// preparation and the f32 sums' trips through y (matmul_bench, one thread, M = 512: panels of 2, 4,
// 8 and 16 groups x 16 blocks 19.2, 16.1, ~12 and 11.4 ms for qwen05b-shape's gate; 16 x 32 9.6 ms,
// 32 x 32 9.5, 16 x 64 10.2).
constexpr int64_t kChunkBlocks = 32;   // blocks of K staged at once
constexpr int64_t kPanelGroups = 16;   // groups of W staged at once
// With one or two row tiles (batched decode) there is little compute to hide a panel's staging
// behind, and W comes from DRAM: one group per panel, so the next group's W is fetched into L2 while
// this one computes (matmul_bench, 2 threads, M = 32 from DRAM, three alternating rounds: gate
// 0.66-0.77 -> 0.55-0.66 ms, down 0.73-0.87 -> 0.63-0.70, 896 x 896 0.16-0.20 -> 0.13-0.15; at M =
// 64 and 128 one-group panels were slower).
constexpr int64_t kSmallBatchRows = 32;
constexpr int64_t panel_groups_for(int64_t M) { return M <= kSmallBatchRows ? 1 : kPanelGroups; }
constexpr int64_t kBBytes = 8 * 64;      // one block's B tile
// B tiles come from the panel in L2; prefetching the one 4 items ahead into L1 keeps the tile unit
// from waiting on them (matmul_bench, one thread, M = 512: gate 8.5 -> 8.2 ms, down 11.7 -> 10.0).
constexpr int64_t kPrefetchItems = 4;

// Tiles 0..3: C of items i % 4; A and B of even / odd items.
constexpr int kA0 = 4, kA1 = 5, kB0 = 6, kB1 = 7;

inline TileConfig kernel_tile_config() {
  TileConfig config;
  for (int t = 0; t < 4; ++t) config.rows[t] = 16, config.colsb[t] = 64;
  config.rows[kA0] = config.rows[kA1] = 16, config.colsb[kA0] = config.colsb[kA1] = 32;
  config.rows[kB0] = config.rows[kB1] = 8, config.colsb[kB0] = config.colsb[kB1] = 64;
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
  // The block's 16 scales (and mins) as 16 f16 in a row: staged with Lanes::f16x16.
  static constexpr bool kF16Row = true;
  static const uint8_t* scales_at(const uint8_t* group, int64_t b) { return group + b * SuperBytes; }
  static const uint8_t* mins_at(const uint8_t* group, int64_t b) { return group + b * SuperBytes + 32; }
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
  static constexpr bool kF16Row = false;
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

// A panel of up to kPanelGroups groups x one chunk of up to kChunkBlocks blocks of K, staged once
// and reused by every 16-row tile of x: each block's B tile as signed codes (u - 2^shift, or u as it
// is for the formats with mins), and its 16 scales (and mins) in f32.
struct Panel {
  alignas(64) int8_t b[kPanelGroups][kChunkBlocks][kBBytes];
  alignas(64) float dw[kPanelGroups][kChunkBlocks][16];
  alignas(64) float mw[kPanelGroups][kChunkBlocks][16];  // Q4_1 / Q5_1's mins
  int64_t g0 = 0, groups = 0;    // groups [g0, g0 + groups) of the call
  int64_t first = 0, count = 0;  // blocks [first, first + count)
};

template <class Lanes, class W>
void stage_panel(const MatmulArgs& a, int64_t g0, int64_t groups, int64_t first, Panel& panel) {
  const int64_t blocks = a.K / kBlock;
  panel.g0 = g0, panel.groups = groups, panel.first = first;
  panel.count = std::min(kChunkBlocks, blocks - first);
  constexpr uint8_t kOffset = W::kMins ? 0 : uint8_t{1} << W::kShift;
  alignas(64) uint8_t unpacked[kBBytes];
  for (int64_t g = 0; g < groups; ++g) {
    const auto* group = static_cast<const uint8_t*>(a.w) + (g0 + g) * blocks * W::kBlockBytes;
    for (int64_t b = 0; b < panel.count; ++b) {
      const uint8_t* u = W::b_rows(W::codes(group, first + b), unpacked);
      for (int64_t i = 0; i < kBBytes; ++i) panel.b[g][b][i] = static_cast<int8_t>(static_cast<uint8_t>(u[i] - kOffset));
      if constexpr (W::kF16Row) {
        Lanes::f16x16(W::scales_at(group, first + b), panel.dw[g][b]);
        if constexpr (W::kMins) Lanes::f16x16(W::mins_at(group, first + b), panel.mw[g][b]);
      } else {
        for (int j = 0; j < 16; ++j) panel.dw[g][b][j] = W::scale(group, first + b, j);
      }
    }
  }
}

// 16 rows of x (m0 ..; the last M % 16 rows copied into `padded`, zeros after them) over one chunk:
// where A's rows are, and where each row's block scales (and code sums) start (rows past M: zeros).
struct RowTile {
  alignas(64) int8_t padded[16][kChunkBlocks * kBlock];
  const float* dx[16];
  const int32_t* xsum[16];  // Q4_1 / Q5_1
  const int8_t* a = nullptr;
  int64_t a_stride = 0, m0 = 0, rows = 0;
};

constexpr float kZeroScales[kChunkBlocks] = {};
constexpr int32_t kZeroSums[kChunkBlocks] = {};

inline void prepare_row_tile(const MatmulArgs& a, int64_t m0, const Panel& panel, RowTile& tile) {
  tile.m0 = m0;
  tile.rows = std::min<int64_t>(16, a.M - m0);
  const int8_t* codes = int8_signed_codes(a.xq, a.K, m0) + panel.first * kBlock;
  if (tile.rows == 16) {
    tile.a = codes, tile.a_stride = int8_signed_row_bytes(a.K);
  } else {
    std::memset(tile.padded, 0, sizeof(tile.padded));
    for (int64_t r = 0; r < tile.rows; ++r)
      std::memcpy(tile.padded[r], codes + r * int8_signed_row_bytes(a.K), static_cast<size_t>(panel.count * kBlock));
    tile.a = &tile.padded[0][0], tile.a_stride = kChunkBlocks * kBlock;
  }
  for (int64_t r = 0; r < 16; ++r) {
    const bool row = r < tile.rows;
    tile.dx[r] = row ? int8_signed_scales(a.xq, a.K, m0 + r) + panel.first : kZeroScales;
    tile.xsum[r] = row ? int8_block_sums(a.xq, a.K, m0 + r) + panel.first : kZeroSums;
  }
}

// The W bytes the next stage_panel will read (the next chunk of this panel's groups, else the next
// panel's first chunk), fetched into L2 a few lines per step while this panel computes, so that the
// staging, which otherwise reads W from DRAM with the tile unit idle, finds them there. At M = 32
// (batched decode) the compute of one panel and the DRAM time of the next are about equal.
struct Upcoming {
  const uint8_t* group = nullptr;  // the current group's first byte of the region
  int64_t group_stride = 0, group_bytes = 0, groups_left = 0, offset = 0, lines_per_step = 0;

  template <class W>
  void start(const MatmulArgs& a, int64_t g0, int64_t first, int64_t steps, int64_t panel_groups) {
    const int64_t blocks = a.K / kBlock, all_groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
    int64_t next_g0 = g0, next_first = first + kChunkBlocks;
    if (next_first >= blocks) next_g0 = g0 + panel_groups, next_first = 0;
    groups_left = next_g0 < all_groups ? std::min(panel_groups, all_groups - next_g0) : 0;
    group_stride = blocks * W::kBlockBytes;
    group = static_cast<const uint8_t*>(a.w) + next_g0 * group_stride + next_first * W::kBlockBytes;
    group_bytes = std::min(kChunkBlocks, blocks - next_first) * W::kBlockBytes;
    offset = 0;
    const int64_t lines = groups_left * ((group_bytes + 63) / 64);
    lines_per_step = steps > 0 ? (lines + steps - 1) / steps : 0;
  }
  void step() {
    for (int64_t n = 0; n < lines_per_step && groups_left > 0; ++n) {
      __builtin_prefetch(group + offset, 0, 2);
      offset += 64;
      if (offset >= group_bytes) offset = 0, group += group_stride, --groups_left;
    }
  }
};

// A position in the panel x chunk: group g, block b (blocks of a group in order, then the next group).
struct Cursor {
  int64_t g = 0, b = 0;
  void next(int64_t count) {
    if (++b == count) b = 0, ++g;
  }
};

// Item i's tile work (i = g * count + b, in tile C[i % 4], A and B [i % 2]): A = x's codes of block
// b, B = the staged block of group g, C = A x B (TDPBSSD, exact); then the store of item i - 1's C.
// The store comes after the next product: a store right after its own product waits for it, and
// the tile unit waits with it (measured).
template <int C, int A, int B, int Prev, class Tiles>
[[gnu::always_inline]] inline void tile_item(Tiles& tiles, const RowTile& tile, const Panel& panel, Cursor& at, int64_t i,
                                             int64_t items, int32_t (*c)[16][16]) {
  if (i < items) {
    tiles.template load<A>(tile.a + at.b * kBlock, tile.a_stride);
    tiles.template load<B>(panel.b[at.g][at.b], 64);
    for (int line = 0; line < 8; ++line) __builtin_prefetch(panel.b[at.g][at.b] + kPrefetchItems * kBBytes + 64 * line, 0, 3);
    tiles.template zero<C>();
    tiles.template dpbssd<C, A, B>();
    at.next(panel.count);
  }
  if (i >= 2 && i - 2 < items) tiles.template store<Prev>(c[Prev], 64);
}

// Item i's f32 step, per output in block order: acc = fma(d_w * d_x, float(S_b), acc) (Q4_1 / Q5_1
// then acc = fma(m_w * d_x, float(sum x_b), acc)). A group's sums start at its first block (0, or
// what the previous chunk left in y) and go to y after its last (+ bias after the last chunk).
template <class Lanes, class W>
[[gnu::always_inline]] inline void scale_item(const MatmulArgs& a, typename Lanes::Acc& acc, const int32_t (*c)[16], const Panel& panel,
                                              const RowTile& tile, Cursor& at, int64_t i, int64_t items) {
  if (i < 0 || i >= items) return;
  const int64_t n0 = (panel.g0 + at.g) * kInterleaveRows;
  const int64_t cols = std::min<int64_t>(kInterleaveRows, a.N - n0);
  float* y = a.y + tile.m0 * a.y_stride + n0;
  if (at.b == 0) {
    if (panel.first == 0) {
      Lanes::zero(acc);
    } else {
      Lanes::load(acc, y, a.y_stride, tile.rows, cols);
    }
  }
  if constexpr (W::kMins) {
    Lanes::template step<true>(acc, c, panel.dw[at.g][at.b], tile.dx, panel.mw[at.g][at.b], tile.xsum, at.b);
  } else {
    Lanes::template step<false>(acc, c, panel.dw[at.g][at.b], tile.dx, nullptr, tile.xsum, at.b);
  }
  if (at.b == panel.count - 1) {
    const bool last = panel.first + panel.count == a.K / kBlock;
    Lanes::store(acc, y, a.y_stride, tile.rows, cols, last && a.bias != nullptr ? a.bias + n0 : nullptr);
  }
  at.next(panel.count);
}

// One row tile x the panel's groups x the chunk, as one stream of items (group by group, blocks in
// order): item i's product is issued, then item i - 1's C stored, then item i - 2's f32 step, so
// the tile unit and the vector unit both have work across group boundaries. The four slots are
// written out: the same schedule generated through a generic lambda ran 1.5x slower (README.md).
template <class Tiles, class Lanes, class W>
void run_row_tile(const MatmulArgs& a, Tiles& tiles, const Panel& panel, const RowTile& tile, Upcoming& upcoming) {
  const int64_t items = panel.groups * panel.count;
  typename Lanes::Acc acc;
  alignas(64) int32_t c[4][16][16];
  Cursor tiled, scaled;
  for (int64_t i = 0; i < items + 3; i += 4) {
    tile_item<0, kA0, kB0, 2>(tiles, tile, panel, tiled, i, items, c);
    scale_item<Lanes, W>(a, acc, c[1], panel, tile, scaled, i - 3, items);
    tile_item<1, kA1, kB1, 3>(tiles, tile, panel, tiled, i + 1, items, c);
    scale_item<Lanes, W>(a, acc, c[2], panel, tile, scaled, i - 2, items);
    tile_item<2, kA0, kB0, 0>(tiles, tile, panel, tiled, i + 2, items, c);
    scale_item<Lanes, W>(a, acc, c[3], panel, tile, scaled, i - 1, items);
    tile_item<3, kA1, kB1, 1>(tiles, tile, panel, tiled, i + 3, items, c);
    scale_item<Lanes, W>(a, acc, c[0], panel, tile, scaled, i, items);
    upcoming.step();
  }
}

// y = x . W^T (+ bias) for interleaved W in format W, on the tiles of `Tiles` with the f32 step on
// `Lanes`. Panels of groups outer, chunks of K next, then 16-row tiles of x, then the panel's groups:
// the panel's staged B stays in L2 and a row tile's A in L1 while the groups pass.
template <class Tiles, class Lanes, class W>
void matmul_interleaved(const MatmulArgs& a) {
  if (a.M == 0 || a.N == 0) return;
  if (a.scratch == nullptr) return run_with_own_scratch(a, matmul_interleaved<Tiles, Lanes, W>);
  Panel& panel = scratch_as<Panel>(*a.scratch);
  Tiles tiles;
  tiles.configure(kernel_tile_config());
  RowTile tile;
  Upcoming upcoming;
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  const int64_t step_groups = panel_groups_for(a.M);
  for (int64_t g0 = 0; g0 < groups; g0 += step_groups) {
    const int64_t panel_groups = std::min(step_groups, groups - g0);
    int64_t first = 0;
    do {  // at least once: K = 0 still writes y = 0 (+ bias)
      stage_panel<Lanes, W>(a, g0, panel_groups, first, panel);
      const int64_t steps = (a.M + 15) / 16 * ((panel.groups * panel.count + 3) / 4 + 1);
      upcoming.template start<W>(a, g0, first, steps, step_groups);
      for (int64_t m0 = 0; m0 < a.M; m0 += 16) {
        prepare_row_tile(a, m0, panel, tile);
        run_row_tile<Tiles, Lanes, W>(a, tiles, panel, tile, upcoming);
      }
      first += kChunkBlocks;
    } while (first < a.K / kBlock);
  }
  tiles.release();
}

}  // namespace
}  // namespace lemma::kernels::x86::amx

// Each format's code staging, for the files that instantiate the kernel per tile backend:
// X(name as in matmul_families.h, its Codes type above).
#define LEMMA_AMX_INT8_CODES(X)                                                                          \
  X(q8_0x16, Q8Codes) X(q4_0x16, Q4Codes) X(q5_0x16, Q5Codes) X(q4_1x16, Q41Codes) X(q5_1x16, Q51Codes) \
  X(iq4_nlx16, Iq4NLCodes) X(iq4_xsx16, Iq4XSCodes)
