// Interleaved f16x16 weights (interleaved_blocks.h) with f32 activations: the layout puts every value
// where the header says; the scalar reference (one FMA per k, in k order) stays within the proven f32
// rounding bound of the exact product; every kernel on this machine gives the reference's bits on
// random and odd shapes and extreme values (subnormal f16 weights and x are not flushed); no row
// depends on M, on the other rows or on how N is split in whole groups; rows read back as the file's.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/kernel_policy.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::random_floats;
using testing::run_matmul;
using testing::same_bits;

constexpr auto kF32 = MatmulPrecision::kF32Activations;

std::string trace(Isa isa, int64_t M, int64_t N, int64_t K) {
  return std::string(isa_name(isa)) + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

struct F16x16 {
  testing::Weights plain;
  std::vector<uint8_t> bytes;
  TensorView view;
};
F16x16 interleaved(const testing::Weights& plain, int64_t N, int64_t K) {
  F16x16 w{plain, std::vector<uint8_t>(interleaved_bytes(DType::kF16, N, K)), {}};
  interleave_rows(DType::kF16, w.plain.bytes.data(), N, K, w.bytes.data());
  w.view = TensorView{w.bytes.data(), DType::kF16, Shape{N, K}, RowLayout::kInterleaved16};
  return w;
}
F16x16 random_f16x16(int64_t N, int64_t K, std::mt19937& rng) { return interleaved(testing::random_weights(DType::kF16, N, K, rng), N, K); }

TEST(F16x16Matmul, LayoutPutsEachValueWhereTheHeaderSays) {
  std::mt19937 rng(5);
  const int64_t N = 35, K = 48;
  const auto w = random_f16x16(N, K, rng);
  EXPECT_TRUE(has_interleaved_form(DType::kF16));
  EXPECT_EQ(format_name(kernels::interleaved(DType::kF16)), std::string(dtype_name(DType::kF16)) + "x16");
  EXPECT_EQ(interleaved_bytes(DType::kF16, N, K), static_cast<size_t>(48 * K * 2));  // 3 groups of 16 rows
  EXPECT_EQ(format_block_values(kernels::interleaved(DType::kF16)), 16);  // K must be whole chunks of 16
  EXPECT_EQ(find_matmul_kernel(kernels::interleaved(DType::kF16), 40, Isa::kScalar), nullptr);
  const auto* src = reinterpret_cast<const uint16_t*>(w.plain.bytes.data());
  const auto* out = static_cast<const uint16_t*>(w.view.data);
  for (int64_t n = 0; n < 48; ++n)
    for (int64_t k = 0; k < K; ++k) ASSERT_EQ(out[(n / 16) * 16 * K + k * 16 + n % 16], n < N ? src[n * K + k] : 0) << n << " " << k;
  EXPECT_EQ(default_matmul_precision(kernels::interleaved(DType::kF16), detected_isa()), kF32);
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    read_interleaved_row(DType::kF16, w.view.data, K, n, row.data());
    ASSERT_EQ(0, std::memcmp(row.data(), w.plain.dequantized.data() + n * K, row.size() * sizeof(float))) << "row " << n;
  }
}

TEST(F16x16Matmul, EveryKernelGivesTheReferenceBitsAndTheExactProductWithinRounding) {
  std::mt19937 rng(7);
  const struct {
    int64_t M, N, K;
  } shapes[] = {{1, 1, 16}, {1, 16, 64}, {2, 17, 96}, {3, 31, 160}, {4, 64, 128}, {5, 40, 48}, {9, 33, 1024},
                {1, 100, 896}, {17, 50, 224}, {33, 20, 64}, {7, 65, 4864}};
  for (const auto& s : shapes) {
    const auto w = random_f16x16(s.N, s.K, rng);
    const int64_t stride = s.K + 3;
    const auto x = random_floats(static_cast<size_t>(s.M * stride), rng, 3.0f);
    const auto bias = random_floats(static_cast<size_t>(s.N), rng);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const auto want = run_matmul(x, stride, s.M, w.view, b, {Isa::kScalar, kF32});
      const auto exact = testing::oracle(x, stride, s.M, w.plain.dequantized, s.N, s.K, b);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_LE(std::fabs(want[i] - exact.y[i]), testing::tolerance(exact.magnitude[i], s.K)) << trace(Isa::kScalar, s.M, s.N, s.K) << " output " << i;
      for (Isa isa : available_isas())
        ASSERT_TRUE(same_bits(run_matmul(x, stride, s.M, w.view, b, {isa, kF32}), want)) << trace(isa, s.M, s.N, s.K);
    }
  }
}

TEST(F16x16Matmul, RowsDoNotDependOnTheBatchOrOnTheSplitOfN) {
  std::mt19937 rng(8);
  const int64_t M = 37, N = 45, K = 512;
  const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
  const auto w = random_f16x16(N, K, rng);
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(trace(isa, M, N, K));
    const MatmulOptions options{isa, kF32};
    const auto batch = run_matmul(x, K, M, w.view, nullptr, options);
    ASSERT_EQ(testing::first_batch_dependence(x, K, M, w.view, options, batch, {2, 3, 4, 5, 6, 7, 16}), "");
    auto split = testing::run_in_group_splits(x, K, M, w.view, options);
    EXPECT_EQ(split.plan.row_group, kInterleaveRows);
    ASSERT_TRUE(same_bits(split.y, batch));
    EXPECT_THROW(split.plan.run_rows(8, 16), InvalidArgument);
  }
}

// Overflow to infinity, subnormal f16 weights and subnormal x (kept, not flushed: a subnormal x
// against weights of 6e4 still counts), a NaN in x (only its row becomes NaN), an all-zero row.
TEST(F16x16Matmul, ExtremeValuesMatchTheReference) {
  std::mt19937 rng(9);
  const int64_t M = 6, N = 19, K = 96;
  auto plain = testing::random_weights(DType::kF16, N, K, rng);
  auto* wv = reinterpret_cast<uint16_t*>(plain.bytes.data());
  for (int64_t i = 0; i < N * K; i += 3) wv[i] = f32_to_f16(i % 2 == 0 ? 6.0e4f : -1.0e-7f);  // huge; subnormal
  for (int64_t i = 1; i < N * K; i += 7) wv[i] = static_cast<uint16_t>(0x0001 + (i & 0x8000));   // smallest subnormal
  const auto w = interleaved(plain, N, K);
  std::vector<float> x(static_cast<size_t>(M * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 5 == 0 ? -1.0f : 1.0f) * static_cast<float>(i % 11) * 7.0e33f;
  for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(K + k)] = 1.0e-39f;  // subnormal x
  x[static_cast<size_t>(2 * K + 40)] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(4 * K + k)] = 0.0f;
  const auto want = run_matmul(x, K, M, w.view, nullptr, {Isa::kScalar, kF32});
  bool any_subnormal_sum = false;
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_TRUE(std::isnan(want[static_cast<size_t>(2 * N + n)])) << n;
    EXPECT_EQ(want[static_cast<size_t>(4 * N + n)], 0.0f) << n;
    any_subnormal_sum |= want[static_cast<size_t>(N + n)] != 0.0f;  // 1e-39 * 6e4 = 6e-35: not flushed
  }
  EXPECT_TRUE(any_subnormal_sum);
  for (Isa isa : available_isas()) EXPECT_TRUE(same_bits(run_matmul(x, K, M, w.view, nullptr, {isa, kF32}), want)) << trace(isa, M, N, K);
}

}  // namespace
}  // namespace lemma::kernels
