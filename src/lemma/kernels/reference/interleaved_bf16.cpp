#include "lemma/kernels/reference/interleaved_bf16.h"

#include <bit>
#include <cmath>

#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"

namespace lemma::kernels {

namespace {

bool is_subnormal(uint32_t bits) { return (bits & 0x7F800000u) == 0 && (bits & 0x007FFFFFu) != 0; }

// A bf16 input as vdpbf16ps reads it: subnormals are zero (DAZ).
float bf16_input(uint16_t v) {
  const uint32_t bits = uint32_t{v} << 16;
  return std::bit_cast<float>(is_subnormal(bits) ? bits & 0x80000000u : bits);
}

// acc + a * b with one rounding to nearest even (an FMA: the product is exact), a subnormal result
// flushed to a signed zero (FTZ).
float fma_ftz(float a, float b, float acc) {
  const uint32_t bits = std::bit_cast<uint32_t>(std::fma(a, b, acc));
  return std::bit_cast<float>(is_subnormal(bits) ? bits & 0x80000000u : bits);
}

}  // namespace

void pack_x_bf16_reference(const float* x, int64_t x_stride, int64_t M, int64_t K, void* out) {
  const int64_t xs = bf16_x_stride(K);
  for (int64_t m = 0; m < M; ++m) {
    auto* dst = static_cast<uint16_t*>(out) + m * xs;
    for (int64_t k = 0; k < xs; ++k) {
      uint32_t bits = k < K ? std::bit_cast<uint32_t>(x[m * x_stride + k]) : 0u;
      if (is_subnormal(bits)) bits &= 0x80000000u;
      dst[k] = f32_to_bf16(std::bit_cast<float>(bits));
    }
  }
}

namespace {

// Both instructions add a pair's two products one at a time; they differ only in which comes first.
enum class PairOrder { kOddFirst, kEvenFirst };

template <PairOrder kOrder>
void matmul_pairs(const MatmulArgs& a) {
  constexpr int kFirst = kOrder == PairOrder::kOddFirst ? 1 : 0;
  const int64_t xs = bf16_x_stride(a.K);
  const auto* w = static_cast<const uint16_t*>(a.w);
  for (int64_t m = 0; m < a.M; ++m) {
    const uint16_t* x = static_cast<const uint16_t*>(a.xq) + m * xs;
    for (int64_t n = 0; n < a.N; ++n) {
      const uint16_t* group = w + n / kInterleaveRows * kInterleaveRows * a.K;
      const int64_t i = n % kInterleaveRows;
      float acc = 0.0f;
      for (int64_t c = 0; c < a.K / 2; ++c) {
        const uint16_t* pair = group + c * 2 * kInterleaveRows + 2 * i;
        acc = fma_ftz(bf16_input(x[2 * c + kFirst]), bf16_input(pair[kFirst]), acc);
        acc = fma_ftz(bf16_input(x[2 * c + 1 - kFirst]), bf16_input(pair[1 - kFirst]), acc);
      }
      a.y[m * a.y_stride + n] = a.bias != nullptr ? acc + a.bias[n] : acc;
    }
  }
}

}  // namespace

// vdpbf16ps (SDM): the odd element's product first.
void matmul_bf16x16_reference(const MatmulArgs& a) { matmul_pairs<PairOrder::kOddFirst>(a); }
// TDPBF16PS (SDM pseudocode): the even element's product first.
void matmul_bf16x16_tdpbf16ps_reference(const MatmulArgs& a) { matmul_pairs<PairOrder::kEvenFirst>(a); }

}  // namespace lemma::kernels
