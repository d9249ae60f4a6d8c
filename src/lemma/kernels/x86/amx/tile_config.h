// The 64-byte tile configuration LDTILECFG reads, and palette 1's limits (8 tiles of at most 16
// rows x 64 bytes). Plain data shared by the hardware tile backend and the emulator.
#pragma once

#include <cstdint>

namespace lemma::kernels::x86::amx {

constexpr int kPalette = 1;
constexpr int kMaxTiles = 8;
constexpr int kMaxRows = 16;
constexpr int kMaxColsb = 64;  // bytes per tile row

// LDTILECFG's memory operand: byte 0 palette, byte 1 start_row, bytes 16..47 colsb of tiles 0..15,
// bytes 48..63 rows of tiles 0..15 (palette 1 uses tiles 0..7; the rest must be 0).
struct alignas(64) TileConfig {
  uint8_t palette_id = kPalette;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Every tile of palette 1 at its largest, 16 rows x 64 bytes (bf16 pairs or f32).
inline TileConfig full_tile_config() {
  TileConfig config;
  for (int t = 0; t < kMaxTiles; ++t) config.rows[t] = kMaxRows, config.colsb[t] = kMaxColsb;
  return config;
}

}  // namespace lemma::kernels::x86::amx
