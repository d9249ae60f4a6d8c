// Compiled with AMX-TILE/BF16 flags only; called only when the CPU has AMX and Linux granted the
// tile state (kernels::cpu_features().amx).
#include <immintrin.h>

#include <cstdint>

#include "lemma/bench/x86/probes.h"
#include "lemma/kernels/x86/amx/tile_config.h"

namespace lemma::bench::x86 {

float dot_bf16_amx(int64_t iterations) {
  // A and B: bf16 1e-3 (0x3A83) everywhere, so each TDPBF16PS adds 32 x 1e-6 per C element.
  alignas(64) uint16_t ones[16][32];
  for (auto& row : ones)
    for (uint16_t& v : row) v = 0x3A83;
  alignas(64) float c[16][16] = {};
  const kernels::x86::amx::TileConfig config = kernels::x86::amx::full_tile_config();
  _tile_loadconfig(&config);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  // Four independent accumulators, as a 2 x 2 register tile of a GEMM keeps in flight.
  for (int64_t i = 0; i < iterations / kAmxIterationsPerRound; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float sum = 0.0f;
  _tile_stored(0, c, 64);
  sum += c[0][0];
  _tile_stored(3, c, 64);
  sum += c[15][15];
  _tile_release();
  return sum;
}

}  // namespace lemma::bench::x86
