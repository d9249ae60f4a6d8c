// The AMX tile emulator (x86/amx/tile_emulator.h) against the instructions' definitions written out
// directly: TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD (int32 wraparound) and TDPBF16PS (fused steps, DAZ/FTZ)
// on random tiles of full and partial shapes, on two sets of tile numbers; loads and stores touch
// exactly rows x colsb bytes, and everything a load or dot product does not write reads as zero.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/x86/amx/tile_emulator.h"

namespace lemma::kernels::x86::amx {
namespace {

enum class Dot { kSS, kSU, kUS, kUU, kBf16 };

// C [m x colsb] = A [m x 4k] x B [k x colsb], every tile 16 rows of 64 bytes in memory.
struct DotShape {
  int m, colsb, k;
};
using Tile = std::vector<uint8_t>;  // 16 x 64 bytes

Tile random_tile(std::mt19937& rng) {
  Tile t(16 * 64);
  for (auto& byte : t) byte = static_cast<uint8_t>(rng());
  return t;
}

template <class T>
T lane(const Tile& t, int row, int index) {
  T v;
  std::memcpy(&v, t.data() + 64 * row + sizeof(T) * index, sizeof(T));
  return v;
}

// The definition: for each output dword, k steps of 4 byte products (int) or 2 bf16 products (f32).
Tile direct(Dot dot, const DotShape& s, const Tile& a, const Tile& b, const Tile& c) {
  const auto daz = [](float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; };
  Tile out = c;
  for (int m = 0; m < s.m; ++m) {
    for (int n = 0; n < s.colsb / 4; ++n) {
      if (dot == Dot::kBf16) {
        float acc = daz(lane<float>(c, m, n));
        for (int k = 0; k < s.k; ++k)
          for (int p = 0; p < 2; ++p)
            acc = daz(std::fma(daz(bf16_to_f32(lane<uint16_t>(a, m, 2 * k + p))), daz(bf16_to_f32(lane<uint16_t>(b, k, 2 * n + p))), acc));
        std::memcpy(out.data() + 64 * m + 4 * n, &acc, 4);
        continue;
      }
      int64_t acc = lane<int32_t>(c, m, n);
      for (int k = 0; k < s.k; ++k) {
        for (int i = 0; i < 4; ++i) {
          const uint8_t x = a[64 * m + 4 * k + i], y = b[64 * k + 4 * n + i];
          const int64_t xa = dot == Dot::kSS || dot == Dot::kSU ? static_cast<int8_t>(x) : x;
          const int64_t yb = dot == Dot::kSS || dot == Dot::kUS ? static_cast<int8_t>(y) : y;
          acc += xa * yb;
        }
      }
      const auto wrapped = static_cast<uint32_t>(static_cast<uint64_t>(acc));  // int32 wraparound
      std::memcpy(out.data() + 64 * m + 4 * n, &wrapped, 4);
    }
  }
  return out;
}

// Runs the dot product on the emulator's tiles C, A, B; checks what the instruction zeroes and what
// TILESTORED leaves alone; returns C as stored (16 x 64, untouched bytes as in `c`).
template <int C, int A, int B>
Tile emulate(Dot dot, const DotShape& s, const Tile& a, const Tile& b, const Tile& c) {
  TileConfig config;
  config.rows[C] = static_cast<uint8_t>(s.m), config.colsb[C] = static_cast<uint16_t>(s.colsb);
  config.rows[A] = static_cast<uint8_t>(s.m), config.colsb[A] = static_cast<uint16_t>(4 * s.k);
  config.rows[B] = static_cast<uint8_t>(s.k), config.colsb[B] = static_cast<uint16_t>(s.colsb);
  TileEmulator tiles;
  tiles.configure(config);
  tiles.load<A>(a.data(), 64);
  tiles.load<B>(b.data(), 64);
  tiles.load<C>(c.data(), 64);
  switch (dot) {
    case Dot::kSS: tiles.dpbssd<C, A, B>(); break;
    case Dot::kSU: tiles.dpbsud<C, A, B>(); break;
    case Dot::kUS: tiles.dpbusd<C, A, B>(); break;
    case Dot::kUU: tiles.dpbuud<C, A, B>(); break;
    case Dot::kBf16: tiles.dpbf16ps<C, A, B>(); break;
  }
  for (int r = 0; r < 16; ++r) {
    for (int byte = 0; byte < 64; ++byte) {
      if (r >= s.m || byte >= s.colsb) { EXPECT_EQ(tiles.row_bytes(C, r)[byte], 0) << "row " << r << " byte " << byte; }
    }
  }
  Tile out = c;
  tiles.store<C>(out.data(), 64);
  tiles.release();
  return out;
}

constexpr DotShape kShapes[] = {{16, 64, 16}, {16, 64, 8}, {7, 44, 5}, {1, 4, 1}, {3, 64, 8}, {16, 8, 3}, {11, 60, 15}};

std::string trace(Dot dot, const DotShape& s) {
  return "dot " + std::to_string(static_cast<int>(dot)) + " m=" + std::to_string(s.m) + " colsb=" + std::to_string(s.colsb) +
         " k=" + std::to_string(s.k);
}

TEST(AmxTileEmulator, IntegerDotProductsMatchTheirDefinitionWithWraparound) {
  std::mt19937 rng(5);
  for (Dot dot : {Dot::kSS, Dot::kSU, Dot::kUS, Dot::kUU}) {
    for (const DotShape& s : kShapes) {
      const Tile a = random_tile(rng), b = random_tile(rng);
      Tile c = random_tile(rng);
      const int32_t near_max = 0x7FFFFF00;  // these accumulators cross INT32_MAX
      for (int m = 0; m < 16; m += 3) std::memcpy(c.data() + 64 * m, &near_max, 4);
      const Tile want = direct(dot, s, a, b, c);
      EXPECT_EQ((emulate<0, 1, 2>(dot, s, a, b, c)), want) << trace(dot, s);
      EXPECT_EQ((emulate<6, 7, 4>(dot, s, a, b, c)), want) << trace(dot, s);
    }
  }
}

// bf16 pairs as bf16 of normal floats, with a few denormal inputs; accumulators normal and denormal.
TEST(AmxTileEmulator, Bf16DotProductMatchesItsDefinitionAndTreatsDenormalsAsZero) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  const auto bf16_tile = [&] {
    Tile t(16 * 64);
    for (int i = 0; i < 16 * 32; ++i) {
      const uint16_t bits = i % 37 == 0 ? uint16_t{0x0005} : f32_to_bf16(value(rng));  // 0x0005: a denormal
      std::memcpy(t.data() + 2 * i, &bits, 2);
    }
    return t;
  };
  for (const DotShape& s : kShapes) {
    const Tile a = bf16_tile(), b = bf16_tile();
    Tile c(16 * 64);
    for (int i = 0; i < 16 * 16; ++i) {
      const float v = i % 29 == 0 ? 1e-40f : value(rng);  // 1e-40: a denormal accumulator
      std::memcpy(c.data() + 4 * i, &v, 4);
    }
    const Tile got = emulate<0, 1, 2>(Dot::kBf16, s, a, b, c);
    EXPECT_EQ(got, direct(Dot::kBf16, s, a, b, c)) << trace(Dot::kBf16, s);
    // The denormal inputs act as zeros: zeroing them changes nothing.
    Tile a0 = a, b0 = b, c0 = c;
    for (int i = 0; i < 16 * 32; ++i) {
      if (i % 37 == 0) std::memset(a0.data() + 2 * i, 0, 2), std::memset(b0.data() + 2 * i, 0, 2);
    }
    for (int i = 0; i < 16 * 16; i += 29) std::memset(c0.data() + 4 * i, 0, 4);
    Tile got0 = emulate<0, 1, 2>(Dot::kBf16, s, a0, b0, c0);
    for (int m = 0; m < 16; ++m)  // untouched stored bytes keep c0's zeros; compare only the outputs
      for (int byte = 0; byte < s.colsb && m < s.m; ++byte) EXPECT_EQ(got0[64 * m + byte], got[64 * m + byte]) << trace(Dot::kBf16, s);
  }
}

TEST(AmxTileEmulator, LoadsAndStoresMoveRowsTimesColsbBytesAndZeroTheRest) {
  std::mt19937 rng(9);
  std::vector<uint8_t> source(16 * 100);
  for (auto& byte : source) byte = static_cast<uint8_t>(rng());
  TileConfig config;
  config.rows[3] = 5, config.colsb[3] = 20;
  config.rows[0] = 16, config.colsb[0] = 64;
  TileEmulator tiles;
  tiles.configure(config);
  tiles.load<0>(source.data(), 100);
  tiles.load<3>(source.data() + 7, 100);  // a stride that is no multiple of 64
  for (int r = 0; r < 16; ++r) {
    for (int byte = 0; byte < 64; ++byte) {
      EXPECT_EQ(tiles.row_bytes(0, r)[byte], source[static_cast<size_t>(100 * r + byte)]);
      const uint8_t want = r < 5 && byte < 20 ? source[static_cast<size_t>(7 + 100 * r + byte)] : 0;
      EXPECT_EQ(tiles.row_bytes(3, r)[byte], want) << r << " " << byte;
    }
  }
  std::vector<uint8_t> out(16 * 30, 0xEE);
  tiles.store<3>(out.data(), 30);
  for (int r = 0; r < 16; ++r)
    for (int byte = 0; byte < 30; ++byte)
      EXPECT_EQ(out[static_cast<size_t>(30 * r + byte)], r < 5 && byte < 20 ? source[static_cast<size_t>(7 + 100 * r + byte)] : 0xEE);
  tiles.zero<0>();
  for (int r = 0; r < 16; ++r)
    for (int byte = 0; byte < 64; ++byte) EXPECT_EQ(tiles.row_bytes(0, r)[byte], 0);
  tiles.release();
}

}  // namespace
}  // namespace lemma::kernels::x86::amx
