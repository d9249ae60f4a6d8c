// The AMX-BF16 kernel for interleaved bf16x16 weights x bf16 activations (interleaved_blocks.h,
// bf16_activations.h), written once over a tile backend: HardwareTiles (tiles_hardware.h) or
// TileEmulator (tile_emulator.h). Every tile is 16 rows x 64 bytes:
//   A = 16 rows of x x 32 k values, read in place (stride bf16_x_stride(K) * 2 bytes); the last
//       M % 16 rows run in A and C tiles configured with that many rows (partial_tile_config), also
//       read in place (each row of C depends only on its row of A, so a row's bits are the same);
//   B = 16 consecutive chunks of a group (1 KiB, stride 64): the VNNI-packed 16 pairs x 16 W rows;
//   C = 16 x 16 f32 outputs, zeroed once and kept in the tile over all of K (TDPBF16PS per 32 k
//       values, in k order), stored once; y = C (+ bias in f32).
// So an output is the same chain of TDPBF16PS steps whatever M is, wherever its row or group falls
// and whichever tile shape runs it (batch invariant). Tile shapes: 2 x-row tiles x 2 groups (4 C +
// 2 A + 2 B = all 8 tiles), or 1 x 3 when one x-row tile is left (decode). Blocks of groups (about
// 512 KiB of W) are outer, so W stays in L2 (2 MiB on Sapphire Rapids) while every x tile passes.
// Allocates nothing (a 1 KiB C buffer on the stack).
// Internal linkage: included by the hardware and the emulated kernel's sources only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul_args.h"
#include "lemma/kernels/x86/amx/tile_config.h"
#include "lemma/kernels/x86/register_tiles.h"

namespace lemma::kernels::x86::amx {
namespace {

constexpr int64_t kStepValues = 32;       // k values per TDPBF16PS: 16 pairs
constexpr int64_t kBTileBytes = 16 * 64;  // one step of one group: 16 chunks
constexpr int64_t kWBlockBytes = int64_t{512} << 10;
// With one x tile (decode), each step first demand-loads the B bytes from half a tile ahead
// (Tiles::touch): TILELOADD from DRAM-streamed W otherwise waits line by line. matmul_bench M = 1
// from DRAM, 2 threads, three alternating rounds: gate 25.0-26.2 -> 26.5-27.5 GB/s, down 25.4-26.3
// -> 27.7-29.0, LM head 24.3-26.6 -> 26.2-27.1 (the AVX512_BF16 GEMV: 26.7-29.7); 1 KiB ahead was
// close, 2-4 KiB ahead slower, and prefetches into L1 (1-4 KiB ahead) or L2 (4-16 KiB) no better
// than none. With two x tiles (M = 17..32) it was mixed (down faster, 896 x 896 slower): not used.
constexpr int64_t kTouchAheadBytes = 512;

// f.template operator()<I>() for I = 0 .. N - 1: tile numbers must be compile-time constants.
template <int N, class F>
inline void for_each_index(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f.template operator()<I>(), ...); }(std::make_integer_sequence<int, N>{});
}

// Tile numbers for MT x-row tiles by NT groups: the C tiles, then A, then B. One x-row tile always
// uses the 1 x 3 map (C 0-2, A 3, B 4-6) whatever NT is, so that one configuration with fewer rows
// in C and A (partial_tile_config) serves every step of a partial x tile.
template <int MT, int NT>
struct TileMap {
  static constexpr int kSlots = MT == 1 ? 3 : NT;
  static_assert(NT <= kSlots && MT * kSlots + MT + kSlots <= kMaxTiles, "palette 1 has 8 tiles");
  static constexpr int c(int mi, int ni) { return mi * kSlots + ni; }
  static constexpr int a(int mi) { return MT * kSlots + mi; }
  static constexpr int b(int ni) { return MT * kSlots + MT + ni; }
};

// The 1 x 3 map's tiles for an x tile of `rows` < 16 rows: C and A of `rows` rows (A read in place,
// so the rows past M are never read; each row of C depends only on its row of A), B of 16.
inline TileConfig partial_tile_config(int64_t rows) {
  using T = TileMap<1, 3>;
  TileConfig config = full_tile_config();
  for (int t = 0; t < 3; ++t) config.rows[T::c(0, t)] = static_cast<uint8_t>(rows);
  config.rows[T::a(0)] = static_cast<uint8_t>(rows);
  return config;
}

// The rows of x of one x tile from row m0 (16, or fewer when M ends first, under
// partial_tile_config): where step k's A tile is, read in place.
class XRows {
 public:
  XRows() = default;
  XRows(const MatmulArgs& a, int64_t m0)
      : rows_(std::min<int64_t>(16, a.M - m0)),
        stride_(bf16_x_stride(a.K)),
        x_(static_cast<const uint16_t*>(a.xq) + m0 * stride_) {}
  int64_t rows() const { return rows_; }
  const void* tile(int64_t k) const { return x_ + k; }
  int64_t stride_bytes() const { return stride_ * 2; }

 private:
  int64_t rows_ = 0, stride_ = 0;
  const uint16_t* x_ = nullptr;
};

// Outputs of MT x-row tiles (from m0, 16 apart) x NT groups (from g0) over all of K.
template <class Tiles, int MT, int NT>
void run_tiles(const MatmulArgs& a, Tiles& tiles, int64_t m0, int64_t g0) {
  using T = TileMap<MT, NT>;
  XRows x[MT];
  for (int i = 0; i < MT; ++i) x[i] = XRows(a, m0 + 16 * i);
  const int64_t group_bytes = kInterleaveRows * a.K * 2;
  const auto* w = static_cast<const uint8_t*>(a.w) + g0 * group_bytes;
  for_each_index<MT>([&]<int I>() { for_each_index<NT>([&]<int J>() { tiles.template zero<T::c(I, J)>(); }); });
  for (int64_t k = 0; k < a.K; k += kStepValues) {
    for_each_index<MT>([&]<int I>() { tiles.template load<T::a(I)>(x[I].tile(k), x[I].stride_bytes()); });
    for_each_index<NT>([&]<int J>() { tiles.template load<T::b(J)>(w + J * group_bytes + k / kStepValues * kBTileBytes, 64); });
    if constexpr (MT == 1) {  // decode: W streams from DRAM, one x tile to hide it behind
      for_each_index<NT>([&]<int J>() {
        const int64_t at = k / kStepValues * kBTileBytes + kTouchAheadBytes;
        if (at < group_bytes) tiles.touch(w + J * group_bytes + at, std::min(kBTileBytes, group_bytes - at));
      });
    }
    for_each_index<MT>([&]<int I>() {
      for_each_index<NT>([&]<int J>() { tiles.template dpbf16ps<T::c(I, J), T::a(I), T::b(J)>(); });
    });
  }
  alignas(64) float c[16][16];
  for_each_index<MT>([&]<int I>() {
    for_each_index<NT>([&]<int J>() {
      tiles.template store<T::c(I, J)>(c, 64);
      const int64_t n0 = (g0 + J) * kInterleaveRows, valid = std::min<int64_t>(kInterleaveRows, a.N - n0);
      for (int64_t r = 0; r < x[I].rows(); ++r) {
        float* y = a.y + (m0 + 16 * I + r) * a.y_stride + n0;
        for (int64_t j = 0; j < valid; ++j) y[j] = a.bias != nullptr ? c[r][j] + a.bias[n0 + j] : c[r][j];
      }
    });
  });
}

// y = x . W^T (+ bias) for bf16x16 W on the tiles of `Tiles`.
template <class Tiles>
void matmul_bf16x16(const MatmulArgs& a) {
  if (a.M == 0 || a.N == 0) return;
  Tiles tiles;
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  const int64_t full_tiles = a.M / 16, rest = a.M % 16;
  // A multiple of 6 groups, so that both 2- and 3-group steps fill a block.
  const int64_t block = std::max<int64_t>(1, kWBlockBytes / (kInterleaveRows * a.K * 2) / 6) * 6;
  const auto one_x_tile = [&](int64_t t, int64_t b0, int64_t b1) {
    for (int64_t g0 = b0; g0 < b1; g0 += 3)
      with_count<3>(std::min<int64_t>(3, b1 - g0), [&]<int G>() { run_tiles<Tiles, 1, G>(a, tiles, 16 * t, g0); });
  };
  bool full_config = full_tiles > 0;
  tiles.configure(full_config ? full_tile_config() : partial_tile_config(rest));
  for (int64_t b0 = 0; b0 < groups; b0 += block) {
    const int64_t b1 = std::min(groups, b0 + block);
    if (full_tiles > 0 && !full_config) tiles.configure(full_tile_config()), full_config = true;
    int64_t t = 0;
    for (; t + 2 <= full_tiles; t += 2)
      for (int64_t g0 = b0; g0 < b1; g0 += 2)
        with_count<2>(std::min<int64_t>(2, b1 - g0), [&]<int G>() { run_tiles<Tiles, 2, G>(a, tiles, 16 * t, g0); });
    if (t < full_tiles) one_x_tile(t++, b0, b1);
    if (rest > 0) {
      // The last M % 16 rows: C and A configured with that many rows, x read in place. (Copied
      // into a zeroed 16-row stage per step, as before, a cached 896 x 896 GEMV took 16-18 us
      // instead of 13-14: a copy and a tile load waiting on its stores every step.)
      if (full_config) tiles.configure(partial_tile_config(rest)), full_config = false;
      one_x_tile(t, b0, b1);
    }
  }
  tiles.release();
}

}  // namespace
}  // namespace lemma::kernels::x86::amx
