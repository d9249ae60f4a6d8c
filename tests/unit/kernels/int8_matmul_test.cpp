// lemma's in-memory integer blocks (lemma_int_blocks.h): asymmetric int8/int4 weights multiplied
// in f32 (dequantise-then-FMA kernels) and W8A8 (int8 activations per row, vpdpbusd / vpmaddubsw).
// W8A8 kernels sum integers exactly, so every ISA must give the reference's bits; every kernel must
// give a row the same bits whatever M is.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/lemma_int_blocks.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/quant_blocks.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::oracle;
using testing::random_floats;
using testing::random_weights;
using testing::tolerance;

// W8A8 weights: one f16 scale per row (repeated in each block, as the format requires), codes in
// -127..127 stored + 128.
testing::Weights w8a8_weights(int64_t N, int64_t K, std::mt19937& rng) {
  testing::Weights w;
  const int64_t blocks = K / kIntBlock;
  w.bytes.resize(static_cast<size_t>(N * blocks) * sizeof(BlockW8A8));
  std::uniform_int_distribution<int> code(-127, 127);
  for (int64_t n = 0; n < N; ++n) {
    const uint16_t d = f32_to_f16(0.004f + 0.0005f * static_cast<float>(n % 9));
    for (int64_t b = 0; b < blocks; ++b) {
      BlockW8A8 block;
      block.d = d;
      for (auto& q : block.qs) q = static_cast<uint8_t>(code(rng) + 128);
      std::memcpy(w.bytes.data() + (n * blocks + b) * static_cast<int64_t>(sizeof(block)), &block, sizeof(block));
    }
  }
  w.view = TensorView{w.bytes.data(), DType::kW8A8, Shape{N, K}};
  w.dequantized.resize(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n) {
    dequantize_row(DType::kW8A8, w.bytes.data() + n * blocks * static_cast<int64_t>(sizeof(BlockW8A8)),
                   w.dequantized.data() + n * K, K);
  }
  return w;
}

std::string trace(Isa isa, int64_t M, int64_t N, int64_t K) {
  return std::string(isa_name(isa)) + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" +
         std::to_string(K);
}

TEST(W8A8Matmul, EveryIsaEqualsTheReferenceBitwiseOnOddShapes) {
  std::mt19937 rng(21);
  for (int64_t K : {32, 96, 160, 256, 1056}) {  // K = 32 * odd: the kernels' half-zmm tail
    for (int64_t M : {1, 2, 3, 7, 17}) {
      for (int64_t N : {1, 5, 33}) {
        const int64_t x_stride = K + 3;
        const auto x = random_floats(static_cast<size_t>(M * x_stride), rng, 2.0f);
        const auto w = w8a8_weights(N, K, rng);
        const auto bias = random_floats(static_cast<size_t>(N), rng);
        for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
          std::vector<float> want(static_cast<size_t>(M * N));
          matmul(x.data(), x_stride, M, w.view, want.data(), N, b, {Isa::kScalar});
          // The integer product is an approximation of the f32 one: within 2% of sum |x w| per element.
          const auto ref = oracle(x, x_stride, M, w.dequantized, N, K, b);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(want[i], ref.y[i], 0.02 * ref.magnitude[i] + 1e-6) << trace(Isa::kScalar, M, N, K) << " i=" << i;
          }
          for (Isa isa : available_isas()) {
            SCOPED_TRACE(trace(isa, M, N, K));
            std::vector<float> got(static_cast<size_t>(M * N), -1.0f);
            matmul(x.data(), x_stride, M, w.view, got.data(), N, b, {isa});
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
          }
        }
      }
    }
  }
}

TEST(W8A8Matmul, RegistryNamesTheKernels) {
  EXPECT_EQ(kernel_name_for(DType::kW8A8, 64, Isa::kScalar), "reference_w8a8");
  if (cpu_features().avx2) {
    EXPECT_EQ(kernel_name_for(DType::kW8A8, 64, Isa::kAvx2), "avx2_w8a8");
  }
  if (cpu_features().avx512) {
    EXPECT_EQ(kernel_name_for(DType::kW8A8, 64, Isa::kAvx512), cpu_features().avx512_vnni ? "avx512_vnni_w8a8" : "avx2_w8a8");
  }
  EXPECT_EQ(kernel_name_for(DType::kW8A8, 48, Isa::kScalar), "");  // not whole blocks
}

TEST(W8A8Matmul, ZeroAndConstantActivations) {
  std::mt19937 rng(3);
  const int64_t M = 3, N = 7, K = 96;
  std::vector<float> x(static_cast<size_t>(M * K), 0.0f);
  for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(K + k)] = 0.5f;  // row 1 constant, rows 0 and 2 zero
  const auto w = w8a8_weights(N, K, rng);
  for (Isa isa : available_isas()) {
    std::vector<float> y(static_cast<size_t>(M * N), -1.0f);
    matmul(x.data(), K, M, w.view, y.data(), N, nullptr, {isa});
    for (int64_t n = 0; n < N; ++n) {
      EXPECT_EQ(y[static_cast<size_t>(n)], 0.0f);
      EXPECT_EQ(y[static_cast<size_t>(2 * N + n)], 0.0f);
      double exact = 0.0;  // constant rows quantise exactly (every code 127)
      for (int64_t k = 0; k < K; ++k) exact += 0.5 * w.dequantized[static_cast<size_t>(n * K + k)];
      EXPECT_NEAR(y[static_cast<size_t>(N + n)], exact, 1e-5 * std::fabs(exact) + 1e-6) << isa_name(isa);
    }
  }
}

TEST(W8A8Matmul, KBeyondTheFormatGivesNaN) {
  std::mt19937 rng(4);
  const int64_t K = kW8A8MaxK + 32, N = 2;
  const auto x = random_floats(static_cast<size_t>(K), rng);
  const auto w = w8a8_weights(N, K, rng);
  for (Isa isa : available_isas()) {
    std::vector<float> y(static_cast<size_t>(N), 0.0f);
    matmul(x.data(), K, 1, w.view, y.data(), N, nullptr, {isa});
    for (float v : y) EXPECT_TRUE(std::isnan(v)) << isa_name(isa);
  }
}

// Asymmetric int8/int4 blocks: f32 activations, within the proven f32 bound of the float64 product.
TEST(LemmaIntMatmul, AsymmetricBlocksEveryIsaOddShapes) {
  std::mt19937 rng(8);
  for (DType type : {DType::kI8Z32, DType::kI4Z32}) {
    for (int64_t K : {32, 96, 160, 288}) {
      for (int64_t M : {1, 2, 3, 7, 17}) {
        const int64_t N = 9;
        const auto x = random_floats(static_cast<size_t>(M * K), rng);
        const auto w = random_weights(type, N, K, rng);
        const auto bias = random_floats(static_cast<size_t>(N), rng);
        const auto ref = oracle(x, K, M, w.dequantized, N, K, bias.data());
        for (Isa isa : available_isas()) {
          SCOPED_TRACE(std::string(dtype_name(type)) + " " + trace(isa, M, N, K));
          std::vector<float> y(static_cast<size_t>(M * N));
          matmul(x.data(), K, M, w.view, y.data(), N, bias.data(), {isa});
          for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref.y[i], tolerance(ref.magnitude[i], K)) << i;
        }
      }
    }
  }
}

TEST(LemmaIntMatmul, RowsDoNotDependOnM) {
  std::mt19937 rng(13);
  for (DType type : {DType::kI8Z32, DType::kI4Z32, DType::kW8A8}) {
    for (int64_t K : {96, 1024}) {
      const int64_t M = 37, N = 45;
      const auto x = random_floats(static_cast<size_t>(M * K), rng);
      const auto w = type == DType::kW8A8 ? w8a8_weights(N, K, rng) : random_weights(type, N, K, rng);
      for (Isa isa : available_isas()) {
        SCOPED_TRACE(std::string(dtype_name(type)) + " " + trace(isa, M, N, K));
        std::vector<float> batch(static_cast<size_t>(M * N));
        matmul(x.data(), K, M, w.view, batch.data(), N, nullptr, {isa});
        std::vector<float> one(static_cast<size_t>(N));
        for (int64_t m = 0; m < M; ++m) {
          matmul(x.data() + m * K, K, 1, w.view, one.data(), N, nullptr, {isa});
          ASSERT_EQ(0, std::memcmp(one.data(), batch.data() + m * N, one.size() * sizeof(float))) << "row " << m;
        }
        for (int64_t prefix : {2, 3, 7, 17}) {
          std::vector<float> part(static_cast<size_t>(prefix * N));
          matmul(x.data(), K, prefix, w.view, part.data(), N, nullptr, {isa});
          ASSERT_EQ(0, std::memcmp(part.data(), batch.data(), part.size() * sizeof(float))) << "M=" << prefix;
        }
        // A row range of W (how callers split N over threads) gives the same columns.
        const auto row_bytes = static_cast<int64_t>(*dtype_bytes(type, static_cast<uint64_t>(K)));
        TensorView tail = w.view;
        tail.data = w.bytes.data() + 11 * row_bytes;
        tail.shape = Shape{N - 11, K};
        std::vector<float> cols(static_cast<size_t>(M * (N - 11)));
        matmul(x.data(), K, M, tail, cols.data(), N - 11, nullptr, {isa});
        for (int64_t m = 0; m < M; ++m) {
          ASSERT_EQ(0, std::memcmp(cols.data() + m * (N - 11), batch.data() + m * N + 11, (N - 11) * sizeof(float)));
        }
      }
    }
  }
}

}  // namespace
}  // namespace lemma::kernels
