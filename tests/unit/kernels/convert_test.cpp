#include "lemma/kernels/convert.h"

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/float_bits.h"

namespace lemma::kernels {
namespace {

bool is_nan16(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }
bool is_nan_bf16(uint16_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0; }

// Independent f16 decoder: sign * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024.
double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return s * std::ldexp(m, -24);
  if (e == 31) return m ? NAN : s * INFINITY;
  return s * std::ldexp(1024 + m, e - 25);
}

TEST(FloatBits, F16DecodesEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (is_nan16(static_cast<uint16_t>(h))) {
      EXPECT_TRUE(std::isnan(f)) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), f16_value(static_cast<uint16_t>(h))) << h;
    EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
  }
}

TEST(FloatBits, F16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto h16 = static_cast<uint16_t>(h);
    const uint16_t back = f32_to_f16(f16_to_f32(h16));
    if (is_nan16(h16)) {
      EXPECT_TRUE(is_nan16(back)) << h;
      EXPECT_EQ(back & 0x8000, h16 & 0x8000) << h;
    } else {
      ASSERT_EQ(back, h16) << h;
    }
  }
}

TEST(FloatBits, F16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // tie rounds to even = infinity
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7C00);
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);        // smallest subnormal
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);        // tie between 0 and 2^-24 -> even (0)
  EXPECT_EQ(f32_to_f16(0x1.8p-24f), 0x0002);      // tie between 1 and 2 ulps -> 2
  EXPECT_EQ(f32_to_f16(0x1.0p-25f * 1.0001f), 0x0001);
  EXPECT_EQ(f32_to_f16(0x1.ff8p-15f), 0x03FF);    // largest subnormal
  EXPECT_EQ(f32_to_f16(0x1.ffcp-15f), 0x0400);    // tie rounds up (even) into the smallest normal
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3C00); // tie -> even
  EXPECT_EQ(f32_to_f16(1.0f + 0x1.8p-10f), 0x3C02);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(1e-30f), 0x0000);
  EXPECT_TRUE(is_nan16(f32_to_f16(NAN)));
  EXPECT_TRUE(is_nan16(f32_to_f16(std::bit_cast<float>(0x7F800001u))));  // payload only in low bits
}

TEST(FloatBits, Bf16RoundTripsAndRounds) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto h16 = static_cast<uint16_t>(h);
    const uint16_t back = f32_to_bf16(bf16_to_f32(h16));
    if (is_nan_bf16(h16)) {
      EXPECT_TRUE(is_nan_bf16(back)) << h;
    } else {
      ASSERT_EQ(back, h16) << h;
    }
  }
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // max float -> inf
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x00010000u)), 0x0001);  // subnormal kept
  EXPECT_TRUE(is_nan_bf16(f32_to_bf16(std::bit_cast<float>(0x7F800001u))));
  EXPECT_TRUE(is_nan_bf16(f32_to_bf16(std::bit_cast<float>(0xFFC00000u))));
}

// Random f32 bit patterns (so NaN, Inf, subnormals and huge values all occur) plus specials.
std::vector<float> tricky_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    switch (i % 4) {
      case 0: break;                                          // any pattern
      case 1: bits = (bits & 0x807FFFFFu) | 0x33000000u; break;  // near f16 subnormal range
      case 2: bits &= 0x807FFFFFu; break;                     // f32 subnormal
      default: bits = (bits & 0x80FFFFFFu) | 0x3E000000u; break;  // ordinary magnitudes
    }
    v[i] = std::bit_cast<float>(bits);
  }
  v[0] = INFINITY; v[1] = -INFINITY; v[2] = NAN; v[3] = -0.0f; v[4] = 65520.0f;
  return v;
}

void expect_same16(uint16_t a, uint16_t b, bool nan_a, bool nan_b, size_t i) {
  if (nan_a || nan_b) {
    EXPECT_TRUE(nan_a && nan_b) << i;
  } else {
    EXPECT_EQ(a, b) << i;
  }
}

TEST(Convert, EveryIsaMatchesScalarBitForBit) {
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(isa_name(isa));
    for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 33, 1000}) {
      const std::vector<float> f = tricky_floats(static_cast<size_t>(n) + 5, static_cast<uint32_t>(n));
      std::vector<uint16_t> h(static_cast<size_t>(n) + 1, 0xABCD), b(static_cast<size_t>(n) + 1, 0xABCD);
      convert_f32_to_f16(f.data(), h.data(), n, isa);
      convert_f32_to_bf16(f.data(), b.data(), n, isa);
      EXPECT_EQ(h[static_cast<size_t>(n)], 0xABCD);  // nothing written past n
      EXPECT_EQ(b[static_cast<size_t>(n)], 0xABCD);
      for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
        expect_same16(h[i], f32_to_f16(f[i]), is_nan16(h[i]), std::isnan(f[i]), i);
        expect_same16(b[i], f32_to_bf16(f[i]), is_nan_bf16(b[i]), std::isnan(f[i]), i);
      }
      std::vector<uint16_t> bits(static_cast<size_t>(n));
      for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i * 2654435761u >> 7);
      std::vector<float> out(static_cast<size_t>(n) + 1, 42.0f), out_b(static_cast<size_t>(n) + 1, 42.0f);
      convert_f16_to_f32(bits.data(), out.data(), n, isa);
      convert_bf16_to_f32(bits.data(), out_b.data(), n, isa);
      EXPECT_EQ(out[static_cast<size_t>(n)], 42.0f);
      EXPECT_EQ(out_b[static_cast<size_t>(n)], 42.0f);
      for (size_t i = 0; i < bits.size(); ++i) {
        const float want = f16_to_f32(bits[i]);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(out[i])) << i;
        } else {
          EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want)) << i;
        }
        EXPECT_EQ(std::bit_cast<uint32_t>(out_b[i]), std::bit_cast<uint32_t>(bf16_to_f32(bits[i]))) << i;
      }
    }
  }
}

}  // namespace
}  // namespace lemma::kernels
