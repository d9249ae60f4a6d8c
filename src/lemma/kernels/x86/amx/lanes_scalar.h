// The AMX-INT8 kernel's f32 scale step in plain C++ (interleaved_amx_kernel.h): one row tile's
// 16 x 16 sums in an array, std::fma per output. For the emulated kernel (no ISA flags); the same
// operations, in the same order per output, as Avx512Lanes (lanes_avx512.h).
// Internal linkage: included by the emulated kernel's source only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "lemma/kernels/float_bits.h"

namespace lemma::kernels::x86::amx {
namespace {

struct ScalarLanes {
  // 16 f16 (unaligned bytes) -> 16 f32.
  static void f16x16(const uint8_t* src, float* dst) {
    for (int j = 0; j < 16; ++j) {
      uint16_t bits;
      std::memcpy(&bits, src + 2 * j, 2);
      dst[j] = f16_to_f32(bits);
    }
  }
  struct Acc {
    float v[16][16];
  };
  static void zero(Acc& acc) {
    for (auto& row : acc.v)
      for (float& v : row) v = 0.0f;
  }
  // Rows [0, rows) x columns [0, cols) from y (rows y_stride apart), the rest 0.
  static void load(Acc& acc, const float* y, int64_t y_stride, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t j = 0; j < 16; ++j) acc.v[r][j] = r < rows && j < cols ? y[r * y_stride + j] : 0.0f;
  }
  template <bool Mins>
  // Block b's step: C (16 x 16 exact sums), W's 16 scales (and mins), row r's x scales dx[r] and
  // code sums xsum[r] (indexed by b).
  static void step(Acc& acc, const int32_t (*c)[16], const float* dw, const float* const* dx, const float* mw, const int32_t* const* xsum,
                   int64_t b) {
    for (int r = 0; r < 16; ++r)
      for (int j = 0; j < 16; ++j) {
        acc.v[r][j] = std::fma(dw[j] * dx[r][b], static_cast<float>(c[r][j]), acc.v[r][j]);
        if constexpr (Mins) acc.v[r][j] = std::fma(mw[j] * dx[r][b], static_cast<float>(xsum[r][b]), acc.v[r][j]);
      }
  }
  // y = acc (+ bias) for rows [0, rows) x columns [0, cols).
  static void store(const Acc& acc, float* y, int64_t y_stride, int64_t rows, int64_t cols, const float* bias) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) y[r * y_stride + j] = bias != nullptr ? acc.v[r][j] + bias[j] : acc.v[r][j];
  }
};

}  // namespace
}  // namespace lemma::kernels::x86::amx
