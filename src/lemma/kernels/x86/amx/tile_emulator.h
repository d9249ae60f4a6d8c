// AMX in plain C++: the 8 tiles of palette 1 (1 KiB each) and the instructions lemma's AMX kernels
// use, following the Intel SDM pseudocode (TILELOADD/TILESTORED/TILEZERO zero what they do not
// write; TDPB[SU][SU]D accumulate in int32 with wraparound). The same interface as HardwareTiles
// (tiles_hardware.h), so a kernel template runs unchanged on either; this one runs on any x86-64
// CPU, which is how the AMX kernels are tested on machines without AMX. TDPBF16PS is an
// approximation of the hardware (see dpbf16ps). A violated configuration or shape rule (#GP/#UD on
// hardware) aborts with a message. One object per thread; not thread-safe. Internal linkage
// (anonymous namespace): included by the emulated kernel's object file and by tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/x86/amx/tile_config.h"

namespace lemma::kernels::x86::amx {
namespace {

class TileEmulator {
 public:
  // LDTILECFG: checks the configuration and zeroes every tile.
  void configure(const TileConfig& config) {
    if (config.palette_id == 0) return release();
    check(config.palette_id == kPalette, "LDTILECFG: palette other than 0 or 1");
    for (uint8_t byte : config.reserved) check(byte == 0, "LDTILECFG: reserved byte not 0");
    for (int t = 0; t < 16; ++t) {
      const bool used = config.rows[t] != 0 || config.colsb[t] != 0;
      check(t < kMaxTiles || !used, "LDTILECFG: tile past palette 1's 8 configured");
      check(config.rows[t] <= kMaxRows && config.colsb[t] <= kMaxColsb, "LDTILECFG: tile larger than 16 x 64 bytes");
      check((config.rows[t] == 0) == (config.colsb[t] == 0), "LDTILECFG: tile with rows but no columns, or columns but no rows");
    }
    config_ = config;
    config_.start_row = 0;
    std::memset(tiles_, 0, sizeof(tiles_));
  }
  // TILERELEASE: back to the init state (no tile usable until the next configure).
  void release() {
    config_ = TileConfig{};
    config_.palette_id = 0;
    std::memset(tiles_, 0, sizeof(tiles_));
  }

  // Not a tile instruction: the hardware backend demand-loads these lines (HardwareTiles::touch).
  void touch(const void*, int64_t) const {}

  template <int T>
  void zero() {
    valid<T>();
    std::memset(tiles_[T], 0, sizeof(tiles_[T]));
  }

  // TILELOADD: rows(T) rows of colsb(T) bytes, `stride` bytes apart; the rest of the tile zeroed.
  template <int T>
  void load(const void* base, int64_t stride) {
    valid<T>();
    const auto* src = static_cast<const uint8_t*>(base);
    for (int r = 0; r < kMaxRows; ++r) {
      uint8_t row[kMaxColsb] = {};
      if (r < config_.rows[T]) std::memcpy(row, src + r * stride, config_.colsb[T]);
      std::memcpy(tiles_[T][r], row, kMaxColsb);
    }
  }

  // TILESTORED: rows(T) rows of colsb(T) bytes, `stride` bytes apart.
  template <int T>
  void store(void* base, int64_t stride) const {
    valid<T>();
    auto* dst = static_cast<uint8_t*>(base);
    for (int r = 0; r < config_.rows[T]; ++r) std::memcpy(dst + r * stride, tiles_[T][r], config_.colsb[T]);
  }

  // C[m][n] += sum over dwords k of the 4 byte products A[m][4k+i] * B[k][4n+i]; s = signed byte,
  // u = unsigned byte (first letter A, second B).
  template <int C, int A, int B>
  void dpbssd() { dot_bytes<C, A, B, true, true>(); }
  template <int C, int A, int B>
  void dpbsud() { dot_bytes<C, A, B, true, false>(); }
  template <int C, int A, int B>
  void dpbusd() { dot_bytes<C, A, B, false, true>(); }
  template <int C, int A, int B>
  void dpbuud() { dot_bytes<C, A, B, false, false>(); }

  // TDPBF16PS: C[m][n] (f32) += A[m].bf16[2k+p] * B[k].bf16[2n+p] for k in order, p = 0 then 1, as
  // the SDM pseudocode states, each step one fused multiply-add rounded to nearest even, inputs
  // (bf16 and the incoming C) denormals-as-zero, results flushed to zero. An approximation: the
  // product of two bf16 values is exact in f32 unless it over- or underflows, so fused and unfused
  // steps differ only there, and the SDM does not pin down what the hardware's adder does inside.
  template <int C, int A, int B>
  void dpbf16ps() {
    dot_shapes<C, A, B>();
    for (int m = 0; m < config_.rows[C]; ++m) {
      float acc[16];
      std::memcpy(acc, tiles_[C][m], sizeof(acc));
      for (int k = 0; k < config_.colsb[A] / 4; ++k) {
        for (int n = 0; n < config_.colsb[C] / 4; ++n) {
          float c = flush(acc[n]);
          for (int p = 0; p < 2; ++p) c = flush(std::fma(bf16_at(A, m, 2 * k + p), bf16_at(B, k, 2 * n + p), c));
          acc[n] = c;
        }
      }
      write_row<C>(m, acc);
    }
    zero_rows_past<C>();
  }

  // For tests: row r of tile t (64 bytes).
  const uint8_t* row_bytes(int t, int r) const { return tiles_[t][r]; }

 private:
  [[noreturn]] static void fault(const char* what) {
    std::fprintf(stderr, "AMX emulator: %s\n", what);
    std::abort();
  }
  static void check(bool ok, const char* what) {
    if (!ok) fault(what);
  }

  template <int T>
  void valid() const {
    static_assert(T >= 0 && T < kMaxTiles, "palette 1 has tiles 0..7");
    check(config_.palette_id == kPalette, "tile instruction before LDTILECFG");
    check(config_.rows[T] != 0, "tile not configured");
  }

  // The dot products' #UD rules: three distinct tiles, C = A x B in shape.
  template <int C, int A, int B>
  void dot_shapes() const {
    static_assert(C != A && C != B && A != B, "TDP*: the three tiles must differ");
    valid<C>();
    valid<A>();
    valid<B>();
    check(config_.rows[A] == config_.rows[C], "TDP*: A and C rows differ");
    check(config_.colsb[A] == 4 * config_.rows[B], "TDP*: A's bytes per row != 4 * B's rows");
    check(config_.colsb[B] == config_.colsb[C], "TDP*: B and C bytes per row differ");
  }

  template <int C, int A, int B, bool ASigned, bool BSigned>
  void dot_bytes() {
    dot_shapes<C, A, B>();
    for (int m = 0; m < config_.rows[C]; ++m) {
      uint32_t acc[16];  // unsigned: int32 adds wrap around, as the hardware's do
      std::memcpy(acc, tiles_[C][m], sizeof(acc));
      for (int k = 0; k < config_.colsb[A] / 4; ++k) {
        for (int n = 0; n < config_.colsb[C] / 4; ++n) {
          for (int i = 0; i < 4; ++i) {
            const int32_t a = widen<ASigned>(tiles_[A][m][4 * k + i]);
            const int32_t b = widen<BSigned>(tiles_[B][k][4 * n + i]);
            acc[n] += static_cast<uint32_t>(a * b);
          }
        }
      }
      write_row<C>(m, acc);
    }
    zero_rows_past<C>();
  }

  template <bool Signed>
  static int32_t widen(uint8_t byte) {
    return Signed ? static_cast<int32_t>(static_cast<int8_t>(byte)) : static_cast<int32_t>(byte);
  }

  static float flush(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }
  float bf16_at(int t, int r, int index) const {
    uint16_t bits;
    std::memcpy(&bits, tiles_[t][r] + 2 * index, 2);
    return flush(bf16_to_f32(bits));
  }

  // write_row_and_zero: C's colsb bytes of the new row, zeros after them.
  template <int C, class Lane>
  void write_row(int m, const Lane (&lanes)[16]) {
    uint8_t row[kMaxColsb] = {};
    std::memcpy(row, lanes, config_.colsb[C]);
    std::memcpy(tiles_[C][m], row, kMaxColsb);
  }
  // zero_upper_rows: rows past C's configured ones.
  template <int C>
  void zero_rows_past() {
    for (int r = config_.rows[C]; r < kMaxRows; ++r) std::memset(tiles_[C][r], 0, kMaxColsb);
  }

  TileConfig config_ = released();
  alignas(64) uint8_t tiles_[kMaxTiles][kMaxRows][kMaxColsb] = {};

  static TileConfig released() {
    TileConfig config;
    config.palette_id = 0;
    return config;
  }
};

}  // namespace
}  // namespace lemma::kernels::x86::amx
