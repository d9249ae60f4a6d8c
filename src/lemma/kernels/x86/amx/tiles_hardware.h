// The AMX instructions behind the tile interface the kernel templates use (see tile_emulator.h for
// the same interface in plain C++). Include only from sources compiled with -mamx-tile -mamx-int8
// -mamx-bf16, and run only where cpu_features().amx (isa.cpp has asked Linux for the tile state).
// GCC's _tile_loadd/_tile_dpbssd/... macros paste the tile number into the asm text (#dst), so they
// take only a literal digit; the wrappers below emit the same instructions with the number as an
// immediate operand ("n", printed by %c) so that a template parameter can name the tile. Loads
// clobber "memory" so that the compiler finishes the stores that staged a tile's bytes first.
// Tile state is per thread: configure() (LDTILECFG) in every call, release() (TILERELEASE) after.
// Internal linkage (see horizontal_sum.h on why ISA objects export nothing weak).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "lemma/kernels/x86/amx/tile_config.h"

namespace lemma::kernels::x86::amx {
namespace {

struct HardwareTiles {
  void configure(const TileConfig& config) { _tile_loadconfig(&config); }
  void release() { _tile_release(); }

  // Not a tile instruction: each 64-byte line of [base, base + bytes) loaded into a register, so
  // that a later TILELOADD finds it in L1. TILELOADD from memory further out waits line by line in
  // the tile unit; these loads are out of order, several misses at once (a software prefetch of the
  // same lines did not help: bf16x16_amx_kernel.h).
  void touch(const void* base, int64_t bytes) const {
    for (int64_t at = 0; at < bytes; at += 64) {
      const __m512i line = _mm512_loadu_si512(static_cast<const char*>(base) + at);
      __asm__ volatile("" ::"v"(line));
    }
  }

  template <int T>
  void zero() {
    static_assert(T >= 0 && T < kMaxTiles);
    __asm__ volatile("tilezero\t%%tmm%c0" ::"n"(T));
  }
  template <int T>
  void load(const void* base, int64_t stride) {
    static_assert(T >= 0 && T < kMaxTiles);
    __asm__ volatile("{tileloadd\t(%0,%1,1), %%tmm%c2|tileloadd\t%%tmm%c2, [%0+%1*1]}" ::"r"(base), "r"(stride), "n"(T)
                     : "memory");
  }
  template <int T>
  void store(void* base, int64_t stride) const {
    static_assert(T >= 0 && T < kMaxTiles);
    __asm__ volatile("{tilestored\t%%tmm%c2, (%0,%1,1)|tilestored\t[%0+%1*1], %%tmm%c2}" ::"r"(base), "r"(stride), "n"(T)
                     : "memory");
  }

#define LEMMA_AMX_DOT(op)                                                                                         \
  template <int C, int A, int B>                                                                                 \
  void op() {                                                                                                    \
    static_assert(C != A && C != B && A != B && C < kMaxTiles && A < kMaxTiles && B < kMaxTiles);                \
    __asm__ volatile("{t" #op "\t%%tmm%c2, %%tmm%c1, %%tmm%c0|t" #op "\t%%tmm%c0, %%tmm%c1, %%tmm%c2}" ::"n"(C), \
                     "n"(A), "n"(B));                                                                            \
  }
  LEMMA_AMX_DOT(dpbssd)
  LEMMA_AMX_DOT(dpbsud)
  LEMMA_AMX_DOT(dpbusd)
  LEMMA_AMX_DOT(dpbuud)
  LEMMA_AMX_DOT(dpbf16ps)
#undef LEMMA_AMX_DOT
};

}  // namespace
}  // namespace lemma::kernels::x86::amx
