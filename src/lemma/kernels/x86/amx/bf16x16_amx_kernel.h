// The AMX-BF16 kernel for interleaved bf16x16 weights x bf16 activations (interleaved_blocks.h,
// bf16_activations.h), written once over a tile backend: HardwareTiles (tiles_hardware.h) or
// TileEmulator (tile_emulator.h). Every tile is 16 rows x 64 bytes:
//   A = 16 rows of x x 32 k values, read in place (stride bf16_x_stride(K) * 2 bytes); the last
//       M % 16 rows are copied into a zeroed 16-row stage first, so every M runs the same 16-row tile;
//   B = 16 consecutive chunks of a group (1 KiB, stride 64): the VNNI-packed 16 pairs x 16 W rows;
//   C = 16 x 16 f32 outputs, zeroed once and kept in the tile over all of K (TDPBF16PS per 32 k
//       values, in k order), stored once; y = C (+ bias in f32).
// So an output is the same chain of TDPBF16PS steps whatever M is, wherever its row or group falls
// and whichever tile shape runs it (batch invariant). Tile shapes: 2 x-row tiles x 2 groups (4 C +
// 2 A + 2 B = all 8 tiles), or 1 x 3 when one x-row tile is left (decode). Blocks of groups (about
// 512 KiB of W) are outer, so W stays in L2 (2 MiB on Sapphire Rapids) while every x tile passes.
// Allocates nothing (a 1 KiB A stage and a 1 KiB C buffer on the stack).
// Internal linkage: included by the hardware and the emulated kernel's sources only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
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

// f.template operator()<I>() for I = 0 .. N - 1: tile numbers must be compile-time constants.
template <int N, class F>
inline void for_each_index(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f.template operator()<I>(), ...); }(std::make_integer_sequence<int, N>{});
}

// Tile numbers for MT x-row tiles by NT groups: the C tiles, then A, then B.
template <int MT, int NT>
struct TileMap {
  static_assert(MT * NT + MT + NT <= kMaxTiles, "palette 1 has 8 tiles");
  static constexpr int c(int mi, int ni) { return mi * NT + ni; }
  static constexpr int a(int mi) { return MT * NT + mi; }
  static constexpr int b(int ni) { return MT * NT + MT + ni; }
};

// 16 rows of x from row m0 (fewer when M ends first): where step k's A tile is.
class XRows {
 public:
  XRows() = default;
  XRows(const MatmulArgs& a, int64_t m0)
      : rows_(std::min<int64_t>(16, a.M - m0)),
        stride_(bf16_x_stride(a.K)),
        x_(static_cast<const uint16_t*>(a.xq) + m0 * stride_) {}
  int64_t rows() const { return rows_; }
  // In place for a full tile; a partial one is copied into `stage` (rows past M stay zero).
  const void* tile(int64_t k, uint16_t (&stage)[16][kStepValues]) const {
    if (rows_ == 16) return x_ + k;
    for (int64_t r = 0; r < rows_; ++r) std::memcpy(stage[r], x_ + r * stride_ + k, sizeof(stage[r]));
    return stage;
  }
  int64_t stride_bytes() const { return rows_ == 16 ? stride_ * 2 : kStepValues * 2; }

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
  alignas(64) uint16_t stage[16][kStepValues] = {};
  for_each_index<MT * NT>([&]<int I>() { tiles.template zero<I>(); });
  for (int64_t k = 0; k < a.K; k += kStepValues) {
    for_each_index<MT>([&]<int I>() { tiles.template load<T::a(I)>(x[I].tile(k, stage), x[I].stride_bytes()); });
    for_each_index<NT>([&]<int J>() { tiles.template load<T::b(J)>(w + J * group_bytes + k / kStepValues * kBTileBytes, 64); });
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
  tiles.configure(full_tile_config());
  const int64_t groups = (a.N + kInterleaveRows - 1) / kInterleaveRows;
  const int64_t x_tiles = (a.M + 15) / 16;
  // A multiple of 6 groups, so that both 2- and 3-group steps fill a block.
  const int64_t block = std::max<int64_t>(1, kWBlockBytes / (kInterleaveRows * a.K * 2) / 6) * 6;
  for (int64_t b0 = 0; b0 < groups; b0 += block) {
    const int64_t b1 = std::min(groups, b0 + block);
    for (int64_t t = 0; t < x_tiles; t += 2) {
      if (x_tiles - t >= 2) {
        for (int64_t g0 = b0; g0 < b1; g0 += 2)
          with_count<2>(std::min<int64_t>(2, b1 - g0), [&]<int G>() { run_tiles<Tiles, 2, G>(a, tiles, 16 * t, g0); });
      } else {
        for (int64_t g0 = b0; g0 < b1; g0 += 3)
          with_count<3>(std::min<int64_t>(3, b1 - g0), [&]<int G>() { run_tiles<Tiles, 1, G>(a, tiles, 16 * t, g0); });
      }
    }
  }
  tiles.release();
}

}  // namespace
}  // namespace lemma::kernels::x86::amx
