// Interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / Q2_Kx16 .. Q6_Kx16 / IQ4_NLx16 / IQ4_XSx16 weights (interleaved_blocks.h): every kernel gives the reference
// kernel's bits on random and odd shapes and extreme values; both stay within the proven f32
// rounding bound of the exact product of the quantised operands, as the plain Q8_0/Q4_0/Q5_0 int8
// kernels do (interleaving moves bytes, never values); no row depends on M, on the other rows or
// on how N is split (in whole groups); misaligned splits and odd N are handled.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/q8k_activations.h"
#include "lemma/kernels/quant_blocks.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::random_floats;
using testing::run_matmul;
using testing::same_bits;

constexpr auto kInt8 = MatmulPrecision::kInt8Activations;
// GGUF Q8_0/Q4_0/Q5_0/Q4_1/Q5_1/IQ4_NL/IQ4_XS and lemma's int8/int4 with zero points (GPTQ, AWQ, lemma int
// checkpoints): the formats read with Q8_0x16's signed activations.
constexpr DType kTypes[] = {DType::kQ8_0,   DType::kQ4_0,   DType::kQ5_0,  DType::kQ4_1, DType::kQ5_1,
                            DType::kIQ4_NL, DType::kIQ4_XS, DType::kI8Z32, DType::kI4Z32};
// Formats that also have an int8-activation kernel in the file's layout.
bool has_plain_int8_kernel(DType plain) { return plain == DType::kQ8_0 || plain == DType::kQ4_0 || plain == DType::kQ5_0; }
// K for a test that wants `small` values per row: IQ4_XS needs whole 256-value blocks.
int64_t row_length(DType plain, int64_t small) { return dtype_info(plain).block_elements == 256 ? (small + 255) / 256 * 256 : small; }

std::string trace(DType type, Isa isa, int64_t M, int64_t N, int64_t K) {
  return std::string(dtype_name(type)) + " " + std::string(isa_name(isa)) + " M=" + std::to_string(M) +
         " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

struct Interleaved {
  testing::Weights plain;
  std::vector<uint8_t> bytes;
  TensorView view;
};

Interleaved interleaved(DType type, int64_t N, int64_t K, std::mt19937& rng) {
  Interleaved w;
  w.plain = testing::random_weights(type, N, K, rng);  // random code bytes: Q8_0 spans -128..127
  w.bytes.resize(interleaved_bytes(type, N, K));
  interleave_rows(type, w.plain.bytes.data(), N, K, w.bytes.data());
  w.view = TensorView{w.bytes.data(), type, Shape{N, K}, RowLayout::kInterleaved16};
  return w;
}

// The exact product of the quantised operands (double), the sum of |d_w d_x S_b| it is made of and
// the sum of its elements' |d_w d_x q_w q_x| (what bounds a kernel that scales parts of a block).
struct Exact {
  std::vector<double> y, magnitude, element_magnitude;
};
Exact exact_product(const std::vector<float>& x, int64_t x_stride, int64_t M, const std::vector<float>& w, int64_t N,
                    int64_t K, const float* bias) {
  std::vector<uint8_t> xq(int8_signed_activation_bytes(M, K) + 64);
  auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(xq.data()) + 63) / 64 * 64);
  quantize_signed_activations_reference(x.data(), x_stride, M, K, aligned);
  Exact e;
  for (int64_t m = 0; m < M; ++m) {
    const int8_t* q = int8_signed_codes(aligned, K, m);
    const float* d = int8_signed_scales(aligned, K, m);
    for (int64_t n = 0; n < N; ++n) {
      double y = bias != nullptr ? bias[n] : 0.0, mag = bias != nullptr ? std::fabs(bias[n]) : 0.0, element_mag = mag;
      for (int64_t b = 0; b < K / 32; ++b) {
        double block = 0.0;  // d_w * S_b: each w value is d_w * q_w exactly
        for (int64_t k = b * 32; k < b * 32 + 32; ++k) {
          block += static_cast<double>(w[static_cast<size_t>(n * K + k)]) * q[k];
          element_mag += std::fabs(static_cast<double>(w[static_cast<size_t>(n * K + k)]) * q[k] * d[b]);
        }
        y += block * d[b];
        mag += std::fabs(block * d[b]);
      }
      e.y.push_back(y);
      e.magnitude.push_back(mag);
      e.element_magnitude.push_back(element_mag);
    }
  }
  return e;
}

TEST(InterleavedMatmul, EveryKernelGivesTheReferenceBitsAndTheExactProductWithinRounding) {
  std::mt19937 rng(11);
  const struct {
    int64_t M, N, K;
  } shapes[] = {{1, 1, 32}, {1, 16, 64}, {2, 17, 96}, {3, 31, 160}, {5, 40, 128}, {4, 48, 256},
                {9, 33, 1024}, {1, 100, 896}, {7, 65, 4864},
                {70, 33, 256}, {131, 20, 96}};  // M > 64: prefill register tiles and their tails
  for (DType type : kTypes) {
    for (const auto& s : shapes) {
      if (s.K % static_cast<int64_t>(dtype_info(type).block_elements) != 0) continue;  // IQ4_XS: K = 256, 1024, 4864
      const auto w = interleaved(type, s.N, s.K, rng);
      const int64_t stride = s.K + 3;
      const auto x = random_floats(static_cast<size_t>(s.M * stride), rng, 3.0f);
      const auto bias = random_floats(static_cast<size_t>(s.N), rng);
      for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
        const auto want = run_matmul(x, stride, s.M, w.view, b, {Isa::kScalar, kInt8});
        const Exact exact = exact_product(x, stride, s.M, w.plain.dequantized, s.N, s.K, b);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_LE(std::fabs(want[i] - exact.y[i]), testing::tolerance(exact.magnitude[i], s.K / 32))
              << trace(type, Isa::kScalar, s.M, s.N, s.K) << " output " << i;
        }
        // The plain layout's kernel (another order) meets the bound too: same values, moved bytes. It
        // scales each block's 8 partial sums of 4 codes (lanes), so its terms are bounded by the
        // elements' magnitudes, not the blocks' (M = 131 found a Q8_0 output past the blocks' bound).
        // (lemma int8/int4 and IQ4 have no int8-activation kernel in the file's layout.)
        if (has_plain_int8_kernel(type)) {
          const auto plain = run_matmul(x, stride, s.M, w.plain.view, b, {Isa::kScalar, kInt8});
          for (size_t i = 0; i < plain.size(); ++i)
            ASSERT_LE(std::fabs(plain[i] - exact.y[i]), testing::tolerance(exact.element_magnitude[i], s.K / 32 + 4))
                << trace(type, Isa::kScalar, s.M, s.N, s.K) << " output " << i;  // + its 4-level lane tree
        }
        for (Isa isa : available_isas()) {
          ASSERT_TRUE(same_bits(run_matmul(x, stride, s.M, w.view, b, {isa, kInt8}), want)) << trace(type, isa, s.M, s.N, s.K);
        }
      }
    }
  }
}

// Batch invariance: a row alone, as a prefix, or in a batch; any split of N in whole groups through
// plan_matmul() + run_rows() gives the same bits; a split inside a group is refused.
TEST(InterleavedMatmul, RowsDoNotDependOnTheBatchOrOnTheSplitOfN) {
  std::mt19937 rng(29);
  for (DType type : kTypes) {
    for (const int64_t M : {37, 75}) {  // batched-decode and prefill register tiles
      const int64_t N = 45, K = 512;
      const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
      const auto w = interleaved(type, N, K, rng);
      for (Isa isa : available_isas()) {
        SCOPED_TRACE(trace(type, isa, M, N, K));
        const MatmulOptions options{isa, kInt8};
        const auto batch = run_matmul(x, K, M, w.view, nullptr, options);
        ASSERT_EQ(testing::first_batch_dependence(x, K, M, w.view, options, batch, {2, 3, 4, 5, 16}), "");
        auto split = testing::run_in_group_splits(x, K, M, w.view, options);
        EXPECT_EQ(split.plan.row_group, kInterleaveRows);
        ASSERT_TRUE(same_bits(split.y, batch));
        EXPECT_THROW(split.plan.run_rows(8, 16), InvalidArgument);
      }
    }
  }
}

// Extreme scales and codes, a NaN in x (only its row is NaN), an all-zero row of x, huge values.
TEST(InterleavedMatmul, ExtremeValuesMatchTheReference) {
  std::mt19937 rng(23);
  for (DType type : kTypes) {
    const int64_t M = 6, N = 19, K = row_length(type, 96);
    auto w = testing::random_weights(type, N, K, rng);
    testing::make_extreme_blocks(type, w.bytes, N * K / static_cast<int64_t>(dtype_info(type).block_elements));
    std::vector<uint8_t> bytes(interleaved_bytes(type, N, K));
    interleave_rows(type, w.bytes.data(), N, K, bytes.data());
    const TensorView view{bytes.data(), type, Shape{N, K}, RowLayout::kInterleaved16};
    std::vector<float> x(static_cast<size_t>(M * K));
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 5 == 0 ? -1.0f : 1.0f) * static_cast<float>(i % 11) * 7.0e3f;
    x[static_cast<size_t>(2 * K + 40)] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(4 * K + k)] = 0.0f;
    const auto want = run_matmul(x, K, M, view, nullptr, {Isa::kScalar, kInt8});
    for (int64_t n = 0; n < N; ++n) {
      EXPECT_TRUE(std::isnan(want[static_cast<size_t>(2 * N + n)])) << n;
      EXPECT_FALSE(std::isnan(want[static_cast<size_t>(3 * N + n)])) << n;
      EXPECT_EQ(want[static_cast<size_t>(4 * N + n)], 0.0f) << n;
    }
    for (Isa isa : available_isas())
      EXPECT_TRUE(same_bits(run_matmul(x, K, M, view, nullptr, {isa, kInt8}), want)) << trace(type, isa, M, N, K);
  }
}

// W8A8x16: every kernel gives the plain W8A8 oracle's bits (matmul_w8a8_reference quantises x by
// the same rule and sums the whole row exactly), on random and odd shapes, with and without bias; no
// row depends on the batch; K past the format's limit gives NaN.
TEST(InterleavedMatmul, W8a8GivesThePlainW8a8ReferenceBits) {
  std::mt19937 rng(43);
  const struct {
    int64_t M, N, K;
  } shapes[] = {{1, 1, 32}, {1, 16, 64}, {2, 17, 96}, {3, 31, 160}, {5, 40, 128}, {9, 33, 1024}, {7, 65, 4864}};
  for (const auto& s : shapes) {
    const auto w = interleaved(DType::kW8A8, s.N, s.K, rng);
    const int64_t stride = s.K + 3;
    const auto x = random_floats(static_cast<size_t>(s.M * stride), rng, 3.0f);
    const auto bias = random_floats(static_cast<size_t>(s.N), rng);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const auto want = run_matmul(x, stride, s.M, w.plain.view, b, {Isa::kScalar, MatmulPrecision::kF32Activations});
      for (Isa isa : available_isas())
        ASSERT_TRUE(same_bits(run_matmul(x, stride, s.M, w.view, b, {isa, kInt8}), want)) << trace(DType::kW8A8, isa, s.M, s.N, s.K);
    }
  }
  {  // one block past kW8A8MaxK: NaN from every kernel, as from the plain one
    const int64_t big_k = kW8A8MaxK + 32;
    const auto big = interleaved(DType::kW8A8, 1, big_k, rng);
    const auto xb = random_floats(static_cast<size_t>(big_k), rng);
    for (Isa isa : available_isas()) EXPECT_TRUE(std::isnan(run_matmul(xb, big_k, 1, big.view, nullptr, {isa, kInt8})[0])) << isa_name(isa);
  }
  const int64_t M = 21, N = 35, K = 256;
  const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
  const auto w = interleaved(DType::kW8A8, N, K, rng);
  for (Isa isa : available_isas()) {
    const MatmulOptions options{isa, kInt8};
    ASSERT_EQ(testing::first_batch_dependence(x, K, M, w.view, options, run_matmul(x, K, M, w.view, nullptr, options), {2, 3, 5}), "")
        << isa_name(isa);
  }
}

// lemma int8/int4 codes and zero points at the ends of their ranges (u - z from -255 to 255) against
// x at +-127 in every block: the largest int32 sums, and on AVX2 the largest vpmaddubsw pairs,
// which random bytes rarely reach. Every kernel gives the oracle's bits, within rounding of exact.
TEST(InterleavedMatmul, ZeroPointsAndCodesAtTheirEndsMatchTheReference) {
  std::mt19937 rng(41);
  for (DType type : {DType::kI8Z32, DType::kI4Z32}) {
    const int64_t M = 3, N = 35, K = 256, blocks = N * K / 32;
    const int top = type == DType::kI8Z32 ? 255 : 15;
    auto w = testing::random_weights(type, N, K, rng);
    const auto bb = static_cast<int64_t>(dtype_info(type).block_bytes);
    for (int64_t b = 0; b < blocks; ++b) {  // block b: codes all top or all 0, z the other end (or 255)
      uint8_t* block = w.bytes.data() + b * bb;
      const bool high = b % 2 == 0;
      block[2] = static_cast<uint8_t>(high ? 0 : (b % 4 == 1 ? 255 : top));
      const uint8_t code = static_cast<uint8_t>(high ? top : 0);
      std::memset(block + 3, type == DType::kI8Z32 ? code : static_cast<uint8_t>(code | code << 4), static_cast<size_t>(bb - 3));
    }
    for (int64_t n = 0; n < N; ++n) dequantize_row(type, w.bytes.data() + n * (K / 32) * bb, w.dequantized.data() + n * K, K);
    std::vector<uint8_t> bytes(interleaved_bytes(type, N, K));
    interleave_rows(type, w.bytes.data(), N, K, bytes.data());
    const TensorView view{bytes.data(), type, Shape{N, K}, RowLayout::kInterleaved16};
    std::vector<float> x(static_cast<size_t>(M * K));
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 32 % 3 == 0 ? -1.0f : 1.0f) * 5.0f;  // codes +-127 per block
    const auto want = run_matmul(x, K, M, view, nullptr, {Isa::kScalar, kInt8});
    const Exact exact = exact_product(x, K, M, w.dequantized, N, K, nullptr);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_LE(std::fabs(want[i] - exact.y[i]), testing::tolerance(exact.magnitude[i], K / 32)) << dtype_name(type) << " " << i;
    for (Isa isa : available_isas())
      EXPECT_TRUE(same_bits(run_matmul(x, K, M, view, nullptr, {isa, kInt8}), want)) << trace(type, isa, M, N, K);
  }
}

// One 256-value block's share of an output, from the raw GGUF block and x's codes: its exact value
// and the sum of the magnitudes of the terms it is made of.
struct ExactBlock {
  double value, magnitude;
};

// The oracle and every kernel for plain's x16 form over Q8_K-style activations, on random and odd
// shapes, with and without bias: the oracle within `roundings` f32 roundings per block of the exact
// product (exact_block(GGUF block bytes, x codes, d_x)), every kernel bit for bit the oracle.
template <typename Exact>
void check_kx16_against_exact(DType plain, uint32_t seed, int roundings, Exact exact_block) {
  std::mt19937 rng(seed);
  const struct {
    int64_t M, N, K;
  } shapes[] = {{1, 1, 256}, {1, 16, 256}, {2, 17, 512}, {3, 40, 768}, {5, 33, 1024}, {1, 70, 4864}, {4, 20, 2048}, {9, 31, 512}};
  const auto block_bytes = static_cast<int64_t>(dtype_info(plain).block_bytes);
  for (const auto& s : shapes) {
    auto w = testing::random_weights(plain, s.N, s.K, rng);  // random scales/mins/codes, small f16 d (and dmin)
    std::vector<uint8_t> bytes(interleaved_bytes(plain, s.N, s.K));
    interleave_rows(plain, w.bytes.data(), s.N, s.K, bytes.data());
    const TensorView view{bytes.data(), plain, Shape{s.N, s.K}, RowLayout::kInterleaved16};
    const int64_t stride = s.K + 5;
    const auto x = random_floats(static_cast<size_t>(s.M * stride), rng, 3.0f);
    const auto bias = random_floats(static_cast<size_t>(s.N), rng);
    std::vector<uint8_t> xq(q8k_activation_bytes(s.M, s.K) + 64);
    auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(xq.data()) + 63) / 64 * 64);
    quantize_q8k_activations_reference(x.data(), stride, s.M, s.K, aligned);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const auto want = run_matmul(x, stride, s.M, view, b, {Isa::kScalar, kInt8});
      const int64_t blocks = s.K / 256;
      for (int64_t m = 0; m < s.M; ++m) {
        const int8_t* q = q8k_codes(aligned, s.K, m);
        const float* dx = q8k_scales(aligned, s.K, m);
        for (int64_t n = 0; n < s.N; ++n) {
          double y = b != nullptr ? b[n] : 0.0, mag = b != nullptr ? std::fabs(b[n]) : 0.0;
          for (int64_t blk = 0; blk < blocks; ++blk) {
            const ExactBlock e = exact_block(w.bytes.data() + (n * blocks + blk) * block_bytes, q + blk * 256, dx[blk]);
            y += e.value;
            mag += e.magnitude;
          }
          ASSERT_LE(std::fabs(want[static_cast<size_t>(m * s.N + n)] - y), testing::tolerance(mag, roundings * blocks + 2))
              << "M=" << s.M << " N=" << s.N << " K=" << s.K << " output " << m << "," << n;
        }
      }
      for (Isa isa : available_isas()) {
        ASSERT_TRUE(same_bits(run_matmul(x, stride, s.M, view, b, {isa, kInt8}), want)) << trace(plain, isa, s.M, s.N, s.K);
      }
    }
  }
}

// Q4_Kx16 and Q5_Kx16: per value d sc u - dmin mn, as the GGUF block holds them (Q5_K: u's fifth
// bit is bit v / 32 of qh[v % 32]).
template <class Block>
ExactBlock exact_q45k(const uint8_t* raw, const int8_t* q, float dx) {
  Block block;
  std::memcpy(&block, raw, sizeof(block));
  uint8_t sc[8], mn[8];
  unpack_k4_scales(block.scales, sc, mn);
  double S = 0.0, N = 0.0;
  for (int64_t v = 0; v < 256; ++v) {
    const uint8_t byte = block.qs[32 * (v / 64) + v % 32];
    int u = (v % 64) < 32 ? byte & 0x0F : byte >> 4;
    if constexpr (std::is_same_v<Block, BlockQ5_K>) u |= ((block.qh[v % 32] >> (v / 32)) & 1) << 4;
    S += static_cast<double>(sc[v / 32]) * u * q[v];
    N += static_cast<double>(mn[v / 32]) * q[v];
  }
  const double d = f16_to_f32(block.d) * static_cast<double>(dx), dmin = f16_to_f32(block.dmin) * static_cast<double>(dx);
  return ExactBlock{d * S - dmin * N, std::fabs(d * S) + std::fabs(dmin * N)};
}

// Two terms per block, each rounded at most twice (the scale product, the conversion).
TEST(InterleavedMatmul, Q4KEveryKernelGivesTheReferenceBitsAndTheExactProductWithinRounding) {
  check_kx16_against_exact(DType::kQ4_K, 17, 4, exact_q45k<BlockQ4_K>);
}
TEST(InterleavedMatmul, Q5KEveryKernelGivesTheReferenceBitsAndTheExactProductWithinRounding) {
  check_kx16_against_exact(DType::kQ5_K, 23, 4, exact_q45k<BlockQ5_K>);
}

// Q2_Kx16 and Q3_Kx16: value 32 c + l's 2-bit code is bits 2 (c % 4) of qs[32 (c / 4) + l]; Q2_K:
// d sc u - dmin mn (4-bit sc and mn per 16 values); Q3_K: d (sc - 32) (u - 4), u's third bit bit c of
// hmask[l] (ggml's dequantize_row_q2_K / q3_K).
template <class Block>
ExactBlock exact_q23k(const uint8_t* raw, const int8_t* q, float dx) {
  constexpr bool kQ3 = std::is_same_v<Block, BlockQ3_K>;
  Block block;
  std::memcpy(&block, raw, sizeof(block));
  double S = 0.0, N = 0.0;
  for (int64_t v = 0; v < 256; ++v) {
    const int64_t c = v / 32, l = v % 32, j = v / 16;
    int u = (block.qs[32 * (c / 4) + l] >> (2 * (c % 4))) & 3;
    if constexpr (kQ3) {
      u |= ((block.hmask[l] >> c) & 1) << 2;
      S += static_cast<double>(unpack_k3_scale(block.scales, static_cast<int>(j))) * (u - 4) * q[v];
    } else {
      S += static_cast<double>(block.scales[j] & 0x0F) * u * q[v];
      N += static_cast<double>(block.scales[j] >> 4) * q[v];
    }
  }
  const double d = f16_to_f32(block.d) * static_cast<double>(dx);
  double dmin = 0.0;
  if constexpr (!kQ3) dmin = f16_to_f32(block.dmin) * static_cast<double>(dx);
  return ExactBlock{d * S - dmin * N, std::fabs(d * S) + std::fabs(dmin * N)};
}

TEST(InterleavedMatmul, Q2KEveryKernelGivesTheReferenceBitsAndTheExactProductWithinRounding) {
  check_kx16_against_exact(DType::kQ2_K, 29, 4, exact_q23k<BlockQ2_K>);
}
TEST(InterleavedMatmul, Q3KEveryKernelGivesTheReferenceBitsAndTheExactProductWithinRounding) {
  check_kx16_against_exact(DType::kQ3_K, 37, 3, exact_q23k<BlockQ3_K>);
}

// Q6_Kx16: per value d sc_j (u - 32) (ggml's dequantize_row_q6_K); random bytes give scales down
// to -128 and codes 0..63.
TEST(InterleavedMatmul, Q6KEveryKernelGivesTheReferenceBitsAndTheExactProductWithinRounding) {
  // One term per block, rounded at most three times (the scale product, the conversion, the add).
  check_kx16_against_exact(DType::kQ6_K, 19, 3, [](const uint8_t* raw, const int8_t* q, float dx) {
    BlockQ6_K block;
    std::memcpy(&block, raw, sizeof(block));
    double S = 0.0;
    for (int64_t v = 0; v < 256; ++v) {
      const int64_t h = v / 128, k = (v % 128) / 32, l = v % 32;
      const uint8_t low = block.ql[64 * h + 32 * (k % 2) + l];
      const int u = (k < 2 ? low & 0x0F : low >> 4) | (((block.qh[32 * h + l] >> (2 * k)) & 3) << 4);
      S += static_cast<double>(block.scales[v / 16]) * (u - 32) * q[v];
    }
    const double d = f16_to_f32(block.d) * static_cast<double>(dx);
    return ExactBlock{d * S, std::fabs(d * S)};
  });
}

class KQuantInterleaved : public ::testing::TestWithParam<DType> {};

TEST_P(KQuantInterleaved, RowsDoNotDependOnTheBatchOrOnTheSplitOfN) {
  const DType plain = GetParam();
  std::mt19937 rng(31);
  const int64_t M = 11, N = 45, K = 768;
  const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
  auto w = testing::random_weights(plain, N, K, rng);
  std::vector<uint8_t> bytes(interleaved_bytes(plain, N, K));
  interleave_rows(plain, w.bytes.data(), N, K, bytes.data());
  const TensorView view{bytes.data(), plain, Shape{N, K}, RowLayout::kInterleaved16};
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(trace(plain, isa, M, N, K));
    const MatmulOptions options{isa, kInt8};
    const auto batch = run_matmul(x, K, M, view, nullptr, options);
    ASSERT_EQ(testing::first_batch_dependence(x, K, M, view, options, batch, {}), "");
    std::vector<float> tiled(batch.size(), -1.0f);
    MatmulPlan plan = plan_matmul(x.data(), K, M, view, tiled.data(), N, nullptr, options);
    prepare_activations(std::span(&plan, 1), test_activations());
    plan.run_rows(16, N);
    plan.run_rows(0, 16);
    ASSERT_TRUE(same_bits(tiled, batch));
  }
}

// The kernels' narrow integer sums at their bounds: every code at its largest (Q2_K/Q4_K u = 3/15,
// Q3_K/Q5_K u = 7/31, Q6_K u = 63), every scale byte 0xFF (Q6_K: 127) and x all +1 or all -1 (codes
// +-127): the AVX2 kernels' int16 pair sums reach their worst case here, which random codes never do.
TEST_P(KQuantInterleaved, LargestCodesAndScalesMatchTheReference) {
  const DType plain = GetParam();
  std::mt19937 rng(37);
  const int64_t M = 3, N = 20, K = 512;
  auto w = testing::random_weights(plain, N, K, rng);
  const auto block_bytes = static_cast<int64_t>(dtype_info(plain).block_bytes);
  for (int64_t blk = 0; blk < N * K / 256; ++blk) {
    uint8_t* raw = w.bytes.data() + blk * block_bytes;
    switch (plain) {  // the file's small f16 scales stay; everything else saturates
      case DType::kQ6_K:
        std::memset(raw, 0xFF, 192);        // ql, qh: u = 63
        std::memset(raw + 192, 0x7F, 16);   // int8 scales 127
        break;
      case DType::kQ2_K:
        std::memset(raw, 0xFF, 80);         // scales/mins 15, u = 3
        break;
      case DType::kQ3_K:
        std::memset(raw, 0xFF, 108);        // high bits set, u = 7, 6-bit scales 63 (31 after - 32)
        break;
      default:                              // Q4_K, Q5_K: d, dmin, then scales, (qh), qs
        std::memset(raw + 4, 0xFF, static_cast<size_t>(block_bytes - 4));
        break;
    }
  }
  std::vector<uint8_t> bytes(interleaved_bytes(plain, N, K));
  interleave_rows(plain, w.bytes.data(), N, K, bytes.data());
  const TensorView view{bytes.data(), plain, Shape{N, K}, RowLayout::kInterleaved16};
  std::vector<float> x(static_cast<size_t>(M * K));
  for (int64_t k = 0; k < K; ++k) {
    x[static_cast<size_t>(k)] = 1.0f;
    x[static_cast<size_t>(K + k)] = -1.0f;
    x[static_cast<size_t>(2 * K + k)] = k % 2 == 0 ? 1.0f : -1.0f;
  }
  const auto want = run_matmul(x, K, M, view, nullptr, {Isa::kScalar, kInt8});
  for (float v : want) ASSERT_TRUE(std::isfinite(v));
  for (Isa isa : available_isas())
    EXPECT_TRUE(same_bits(run_matmul(x, K, M, view, nullptr, {isa, kInt8}), want)) << trace(plain, isa, M, N, K);
}

INSTANTIATE_TEST_SUITE_P(KQuants, KQuantInterleaved, ::testing::Values(DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(InterleavedMatmul, LayoutSizesNamesAndDefaults) {
  for (DType plain : {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K,
                      DType::kQ6_K, DType::kI8Z32, DType::kI4Z32, DType::kW8A8, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ4_1,
                      DType::kQ5_1, DType::kBF16, DType::kF16}) {
    EXPECT_TRUE(has_interleaved_form(plain)) << dtype_name(plain);
  }
  EXPECT_EQ(interleaved_bytes(DType::kIQ4_NL, 17, 64), size_t{32 * 2 * 18});
  EXPECT_EQ(interleaved_bytes(DType::kIQ4_XS, 16, 512), size_t{16 * 2 * 136});
  EXPECT_EQ(interleaved_bytes(DType::kQ5_1, 17, 64), size_t{32 * 2 * 24});
  EXPECT_FALSE(has_interleaved_form(DType::kQ8_1));
  EXPECT_EQ(interleaved_bytes(DType::kI8Z32, 17, 64), size_t{32 * 2 * 35});
  EXPECT_EQ(interleaved_bytes(DType::kI4Z32, 16, 96), size_t{16 * 3 * 19});
  EXPECT_EQ(interleaved_bytes(DType::kQ8_0, 17, 64), size_t{32 * 2 * 34});  // two groups, padded
  EXPECT_EQ(interleaved_bytes(DType::kQ4_0, 16, 32), size_t{16 * 18});
  EXPECT_EQ(interleaved_bytes(DType::kQ5_0, 1, 64), size_t{16 * 2 * 22});
  std::vector<uint8_t> out(64);
  EXPECT_EQ(interleaved_bytes(DType::kQ4_K, 20, 512), size_t{32 * 2 * 144});
  EXPECT_EQ(interleaved_bytes(DType::kQ6_K, 17, 256), size_t{32 * 210});
  EXPECT_EQ(interleaved_bytes(DType::kQ5_K, 16, 512), size_t{16 * 2 * 176});
  EXPECT_EQ(interleaved_bytes(DType::kQ3_K, 1, 256), size_t{16 * 110});
  EXPECT_THROW(interleave_rows(DType::kQ8_1, out.data(), 1, 256, out.data()), InvalidArgument);
  EXPECT_THROW(interleave_rows(DType::kQ4_K, out.data(), 1, 160, out.data()), InvalidArgument);  // not whole blocks
  for (MatrixFormat type : {kernels::interleaved(DType::kQ8_0), kernels::interleaved(DType::kQ4_0), kernels::interleaved(DType::kQ5_0), kernels::interleaved(DType::kQ2_K), kernels::interleaved(DType::kQ3_K), kernels::interleaved(DType::kQ4_K), kernels::interleaved(DType::kQ5_K),
                     kernels::interleaved(DType::kQ6_K), kernels::interleaved(DType::kI8Z32), kernels::interleaved(DType::kI4Z32), kernels::interleaved(DType::kIQ4_NL), kernels::interleaved(DType::kIQ4_XS), kernels::interleaved(DType::kQ4_1), kernels::interleaved(DType::kQ5_1)}) {
    EXPECT_EQ(default_matmul_precision(type, Isa::kScalar), kInt8);
    const std::string name = format_name(type);
    EXPECT_EQ(kernel_name_for(type, 256, Isa::kScalar, kInt8), "reference_" + name + "_int8");
    if (detected_isa() >= Isa::kAvx2) { EXPECT_EQ(kernel_name_for(type, 256, Isa::kAvx2, kInt8), "avx2_" + name + "_int8"); }
    if (detected_isa() >= Isa::kAvx512) {
      EXPECT_EQ(kernel_name_for(type, 256, Isa::kAvx512, kInt8), std::string(cpu_features().avx512_vnni ? "avx512_vnni_" : "avx2_") + name + "_int8");  // VNNI is checked once, in the kernel set
    }
  }
}

// Rows read back from every interleaved layout (a tied LM head's embedding lookups) are bit for bit
// the file rows' dequantised values, in full and partial 16-row groups.
TEST(InterleavedMatmul, RowsReadBackAsTheFileRowsDequantise) {
  std::mt19937 rng(31);
  for (DType plain : {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K,
                      DType::kQ6_K, DType::kI8Z32, DType::kI4Z32, DType::kW8A8, DType::kBF16, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ4_1, DType::kQ5_1}) {
    const int64_t N = 37, K = dtype_info(plain).block_elements == 256 ? 512 : 96;
    const auto w = testing::random_weights(plain, N, K, rng);
    std::vector<uint8_t> bytes(interleaved_bytes(plain, N, K));
    interleave_rows(plain, w.bytes.data(), N, K, bytes.data());
    std::vector<float> got(static_cast<size_t>(K));
    for (int64_t n = 0; n < N; ++n) {
      read_interleaved_row(plain, bytes.data(), K, n, got.data());
      ASSERT_EQ(0, std::memcmp(got.data(), w.dequantized.data() + n * K, got.size() * sizeof(float))) << dtype_name(plain) << " row " << n;
    }
  }
  std::vector<float> out(32);
  EXPECT_THROW(read_interleaved_row(DType::kQ8_1, nullptr, 32, 0, out.data()), InvalidArgument);  // no interleaved form
}

}  // namespace
}  // namespace lemma::kernels
