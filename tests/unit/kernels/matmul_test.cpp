#include "lemma/kernels/matmul.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "hardware_paths.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::oracle;
using testing::random_floats;
using testing::random_weights;
using testing::tolerance;

// Runs one case on one ISA: x and y have padded strides; y's padding must stay untouched.
void check_case(Isa isa, DType type, int64_t M, int64_t N, int64_t K, bool with_bias, uint32_t seed) {
  SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(dtype_name(type)) + " M=" + std::to_string(M) +
               " N=" + std::to_string(N) + " K=" + std::to_string(K) + (with_bias ? " bias" : ""));
  std::mt19937 rng(seed);
  const int64_t x_stride = K + 3, y_stride = N + 2;
  const auto x = random_floats(static_cast<size_t>(M * x_stride), rng);
  const auto bias = random_floats(static_cast<size_t>(N), rng);
  const auto w = random_weights(type, N, K, rng);
  std::vector<float> y(static_cast<size_t>(M * y_stride), -7.0f);
  // f32 activations (Q8_0/Q4_0/Q5_0 default to int8 ones from AVX2 up: int8_activations_test.cpp).
  matmul(x.data(), x_stride, M, w.view, y.data(), y_stride, with_bias ? bias.data() : nullptr,
         {isa, MatmulPrecision::kF32Activations});
  const auto ref = oracle(x, x_stride, M, w.dequantized, N, K, with_bias ? bias.data() : nullptr);
  int failures = 0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < y_stride; ++n) {
      const float got = y[static_cast<size_t>(m * y_stride + n)];
      if (n >= N) {
        EXPECT_EQ(got, -7.0f) << "padding overwritten at m=" << m << " n=" << n;
        continue;
      }
      const size_t i = static_cast<size_t>(m * N + n);
      if (std::fabs(got - ref.y[i]) > tolerance(ref.magnitude[i], K) && ++failures < 5) {
        ADD_FAILURE() << "m=" << m << " n=" << n << " got " << got << " want " << ref.y[i];
      }
    }
  }
}

TEST(Matmul, FloatWeightsEveryIsaOddShapes) {
  uint32_t seed = 1;
  for (Isa isa : available_isas()) {
    for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (int64_t M : {1, 2, 3, 7, 16, 33}) {
        for (int64_t K : {1, 7, 32, 33, 255, 256, 1000}) {
          for (int64_t N : {1, 5, 17}) {
            check_case(isa, type, M, N, K, (seed & 1) != 0, seed);
            ++seed;
          }
        }
      }
    }
  }
}

TEST(Matmul, QuantizedWeightsEveryIsa) {
  uint32_t seed = 100;
  for (Isa isa : available_isas()) {
    for (DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kIQ4_NL}) {
      for (int64_t K : {32, 96, 288}) {
        for (int64_t M : {1, 3, 17}) {
          check_case(isa, type, M, 5, K, (seed & 1) != 0, seed);
          ++seed;
        }
      }
    }
    for (DType type : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS}) {
      for (int64_t K : {256, 768}) {
        for (int64_t M : {1, 3, 17}) {
          check_case(isa, type, M, 7, K, (seed & 1) != 0, seed);
          ++seed;
        }
      }
    }
  }
}

TEST(Matmul, EmptyDimensions) {
  std::vector<float> x(8, 1.0f), w(8, 1.0f), y(4, 5.0f);
  const TensorView wk0{w.data(), DType::kF32, Shape{2, 0}};
  for (Isa isa : available_isas()) {
    matmul(x.data(), 4, 2, wk0, y.data(), 2, nullptr, {isa});  // K = 0: y = 0
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_EQ(y[3], 0.0f);
  }
  const TensorView w24{w.data(), DType::kF32, Shape{2, 4}};
  y.assign(4, 5.0f);
  matmul(x.data(), 4, 0, w24, y.data(), 2);  // M = 0: nothing written
  EXPECT_EQ(y[0], 5.0f);
}

TEST(Matmul, BadArgumentsThrow) {
  std::vector<float> x(64, 1.0f), w(64, 1.0f), y(64);
  const TensorView rank1{w.data(), DType::kF32, Shape{64}};
  const TensorView w8x8{w.data(), DType::kF32, Shape{8, 8}};
  EXPECT_THROW(matmul(x.data(), 8, 1, rank1, y.data(), 8), InvalidArgument);
  EXPECT_THROW(matmul(x.data(), 7, 1, w8x8, y.data(), 8), InvalidArgument);  // x_stride < K
  EXPECT_THROW(matmul(x.data(), 8, 1, w8x8, y.data(), 7), InvalidArgument);  // y_stride < N
  const TensorView q4k{w.data(), DType::kQ4_K, Shape{1, 100}};
  EXPECT_THROW(matmul(x.data(), 100, 1, q4k, y.data(), 1), Unsupported);  // K not whole blocks
  const TensorView i8{w.data(), DType::kI8, Shape{8, 8}};
  EXPECT_THROW(matmul(x.data(), 8, 1, i8, y.data(), 8), Unsupported);
}

TEST(Matmul, Bf16ActivationPrecisionIsCloseToRoundedX) {
  if (!cpu_features().avx512_bf16) GTEST_SKIP() << testing::without("AVX512_BF16", "the vdpbf16ps kernel has no emulated twin and did not run");
  uint32_t seed = 500;
  for (int64_t M : {1, 3, 7}) {
    for (int64_t K : {1, 15, 16, 17, 31, 32, 33, 255, 1000}) {
      std::mt19937 rng(seed++);
      const int64_t N = 9;
      auto x = random_floats(static_cast<size_t>(M * K), rng);
      const auto w = random_weights(DType::kBF16, N, K, rng);
      std::vector<float> y(static_cast<size_t>(M * N));
      matmul(x.data(), K, M, w.view, y.data(), N, nullptr, {Isa::kAvx512, MatmulPrecision::kBf16Activations});
      for (auto& v : x) v = bf16_to_f32(f32_to_bf16(v));  // what the kernel multiplies by
      const auto ref = oracle(x, K, M, w.dequantized, N, K, nullptr);
      for (size_t i = 0; i < y.size(); ++i) {
        EXPECT_NEAR(y[i], ref.y[i], tolerance(ref.magnitude[i], K)) << "M=" << M << " K=" << K << " i=" << i;
      }
    }
  }
}

}  // namespace
}  // namespace lemma::kernels
