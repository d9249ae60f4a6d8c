// bf16 weights with bf16 activations (vdpbf16ps): the default precision rule, the x packer, and the
// blocked kernel under every cache-block size against the reference on odd shapes, with row m of
// an M-row call bitwise equal to the 1-row call for each block size.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/matmul_blocking.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/x86/x86_kernels.h"
#include "hardware_paths.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::oracle;
using testing::random_floats;
using testing::random_weights;
using testing::tolerance;

// A 64-byte aligned buffer of `bytes` bytes filled with 0xAB.
struct Aligned {
  explicit Aligned(size_t bytes) : storage(bytes + 64, 0xAB) {}
  void* get() {
    auto* p = storage.data();
    return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
  }
  std::vector<uint8_t> storage;
};

bool has_dpbf16() { return cpu_features().avx512_bf16; }

TEST(Bf16Matmul, DefaultPrecisionIsBf16WhereTheDotExists) {
  EXPECT_EQ(default_matmul_precision(DType::kBF16, Isa::kScalar), MatmulPrecision::kF32Activations);
  if (cpu_features().avx2) {
    EXPECT_EQ(default_matmul_precision(DType::kBF16, Isa::kAvx2), MatmulPrecision::kF32Activations);
  }
  EXPECT_EQ(default_matmul_precision(DType::kF16, detected_isa()), MatmulPrecision::kF32Activations);
  EXPECT_EQ(default_matmul_precision(DType::kF32, detected_isa()), MatmulPrecision::kF32Activations);
  if (cpu_features().avx512) {
    EXPECT_EQ(default_matmul_precision(DType::kBF16, Isa::kAvx512),
              has_dpbf16() ? MatmulPrecision::kBf16Activations : MatmulPrecision::kF32Activations);
  }
  if (has_dpbf16()) {
    EXPECT_EQ(kernel_name_for(DType::kBF16, 64, Isa::kAvx512, MatmulPrecision::kBf16Activations), "avx512_bf16_dpbf16");
  }
}

TEST(Bf16Matmul, PackerRoundsToNearestEvenAndZeroPads) {
  if (!has_dpbf16()) GTEST_SKIP() << testing::without("AVX512_BF16", "the vdpbf16ps kernel has no emulated twin and did not run");
  std::mt19937 rng(3);
  for (int64_t K : {1, 15, 16, 17, 31, 32, 33, 64, 100}) {
    const int64_t M = 3, x_stride = K + 5;
    auto x = random_floats(static_cast<size_t>(M * x_stride), rng);
    x[0] = 1.0f + 0x1p-8f;                  // a tie: rounds to even (1.0)
    x[static_cast<size_t>(K - 1)] = -0.0f;  // keeps its sign
    Aligned out(bf16_activation_bytes(M, K));
    x86::pack_x_bf16_avx512(x.data(), x_stride, M, K, out.get());
    const auto* got = static_cast<const uint16_t*>(out.get());
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t k = 0; k < bf16_x_stride(K); ++k) {
        const uint16_t want = k < K ? f32_to_bf16(x[static_cast<size_t>(m * x_stride + k)]) : 0;
        ASSERT_EQ(got[m * bf16_x_stride(K) + k], want) << "K=" << K << " m=" << m << " k=" << k;
      }
    }
  }
}

// y for x [M, K] through the blocked kernel with `block_rows`, with a padded y stride.
std::vector<float> run_blocked(const std::vector<float>& x, int64_t x_stride, int64_t M, const TensorView& w,
                               const float* bias, int64_t block_rows) {
  const int64_t N = w.shape[0], K = w.shape[1];
  Aligned xq(bf16_activation_bytes(M, K));
  x86::pack_x_bf16_avx512(x.data(), x_stride, M, K, xq.get());
  std::vector<float> y(static_cast<size_t>(M * N));
  MatmulArgs args;
  args.x = x.data();
  args.x_stride = x_stride;
  args.xq = xq.get();
  args.w = w.data;
  args.w_row_bytes = K * 2;
  args.bias = bias;
  args.y = y.data();
  args.y_stride = N;
  args.M = M;
  args.N = N;
  args.K = K;
  x86::matmul_bf16_dpbf16_avx512_blocked(args, block_rows);
  return y;
}

TEST(Bf16Matmul, EveryBlockSizeMatchesTheReferenceAndIsBatchInvariant) {
  if (!has_dpbf16()) GTEST_SKIP() << testing::without("AVX512_BF16", "the vdpbf16ps kernel has no emulated twin and did not run");
  uint32_t seed = 40;
  for (int64_t K : {1, 31, 33, 100, 257}) {
    for (int64_t N : {1, 7, 13, 29}) {
      std::mt19937 rng(seed++);
      const int64_t M = 37, x_stride = K + 3;
      const auto x = random_floats(static_cast<size_t>(M * x_stride), rng);
      const auto bias = random_floats(static_cast<size_t>(N), rng);
      const auto w = random_weights(DType::kBF16, N, K, rng);
      auto rounded = x;  // what the kernel multiplies by
      for (auto& v : rounded) v = bf16_to_f32(f32_to_bf16(v));
      const auto ref = oracle(rounded, x_stride, M, w.dequantized, N, K, bias.data());
      const auto by_default = run_blocked(x, x_stride, M, w.view, bias.data(), dpbf16_block_rows(M, K));
      for (int64_t block_rows : {int64_t{1}, int64_t{5}, int64_t{6}, int64_t{12}, int64_t{1} << 40}) {
        SCOPED_TRACE("K=" + std::to_string(K) + " N=" + std::to_string(N) + " block_rows=" + std::to_string(block_rows));
        const auto y = run_blocked(x, x_stride, M, w.view, bias.data(), block_rows);
        int failures = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          if (std::fabs(y[i] - ref.y[i]) > tolerance(ref.magnitude[i], K) && ++failures < 5) {
            ADD_FAILURE() << "i=" << i << " got " << y[i] << " want " << ref.y[i];
          }
        }
        EXPECT_EQ(0, std::memcmp(y.data(), by_default.data(), y.size() * 4)) << "block size changed bits";
        // Every M from 1 to 37 (each ends at a different register tile), and each row alone.
        for (int64_t m_count = 1; m_count <= M; ++m_count) {
          const auto part = run_blocked(x, x_stride, m_count, w.view, bias.data(), block_rows);
          EXPECT_EQ(0, std::memcmp(part.data(), y.data(), part.size() * 4)) << "first " << m_count << " rows";
          const std::vector<float> row(x.begin() + (m_count - 1) * x_stride, x.begin() + m_count * x_stride);
          const auto alone = run_blocked(row, x_stride, 1, w.view, bias.data(), block_rows);
          EXPECT_EQ(0, std::memcmp(alone.data(), y.data() + (m_count - 1) * N, static_cast<size_t>(N) * 4))
              << "row " << m_count - 1 << " alone";
        }
      }
    }
  }
}

TEST(Bf16Matmul, BlockRowsAreWholeRegisterTiles) {
  for (int64_t M : {1, 4, 5, 16, 32, 512}) {
    for (int64_t K : {1, 896, 4864, 1 << 20}) {
      const int64_t rows = dpbf16_block_rows(M, K);
      EXPECT_GE(rows, 6) << "M=" << M << " K=" << K;
      EXPECT_EQ(rows % 6, 0) << "M=" << M << " K=" << K;
    }
  }
}

// Through matmul() and the default precision: the public path packs x once and gives the same
// bits as the kernel called directly, and the planned split over N changes nothing.
TEST(Bf16Matmul, DefaultPathEqualsTheKernel) {
  if (!has_dpbf16()) GTEST_SKIP() << testing::without("AVX512_BF16", "the vdpbf16ps kernel has no emulated twin and did not run");
  std::mt19937 rng(77);
  const int64_t M = 9, N = 50, K = 200;
  const auto x = random_floats(static_cast<size_t>(M * K), rng);
  const auto w = random_weights(DType::kBF16, N, K, rng);
  std::vector<float> y(static_cast<size_t>(M * N));
  matmul(x.data(), K, M, w.view, y.data(), N, nullptr, {Isa::kAvx512});
  const auto direct = run_blocked(x, K, M, w.view, nullptr, dpbf16_block_rows(M, K));
  EXPECT_EQ(0, std::memcmp(y.data(), direct.data(), y.size() * 4));
}

}  // namespace
}  // namespace lemma::kernels
