// Interleaved bf16x16 weights (interleaved_blocks.h) with bf16 activations: the layout puts every
// value where the header says; the scalar reference (vdpbf16ps as the Intel SDM defines it) stays
// within the proven f32 rounding bound of the exact product of the bf16-rounded operands; every
// kernel on this machine gives the reference's bits on random and odd shapes and extreme values
// (so the CPU's vdpbf16ps is the SDM's: odd product first, one rounding per add, DAZ/FTZ); no row
// depends on M, on the other rows or on how N is split in whole groups.
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/bf16_activations.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/reference/interleaved_bf16.h"
#include "lemma/kernels/x86/x86_kernels.h"
#include "bf16x16_test_util.h"
#include "hardware_paths.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::random_floats;
using testing::run_matmul;
using testing::same_bits;

constexpr auto kBf16 = MatmulPrecision::kBf16Activations;

std::string trace(Isa isa, int64_t M, int64_t N, int64_t K) {
  return std::string(isa_name(isa)) + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

using testing::bf16_rounded;

// Isa::kAmx runs TDPBF16PS, whose pair order differs from vdpbf16ps's: amx_bf16_matmul_test.cpp
// checks it against its own model.
bool runs_vdpbf16ps(Isa isa) { return isa != Isa::kAmx; }

TEST(Bf16x16Matmul, LayoutPutsEachPairWhereTheHeaderSays) {
  std::mt19937 rng(5);
  const int64_t N = 35, K = 96;
  const auto w = testing::random_bf16x16(N, K, rng);
  EXPECT_TRUE(has_interleaved_form(DType::kBF16));
  EXPECT_EQ(format_name(interleaved(DType::kBF16)), std::string(dtype_name(DType::kBF16)) + "x16");
  EXPECT_EQ(interleaved_bytes(DType::kBF16, N, K), static_cast<size_t>(48 * K * 2));  // 3 groups of 16 rows
  EXPECT_EQ(w.view.bytes(), static_cast<uint64_t>(48 * K * 2));
  EXPECT_EQ(format_block_values(interleaved(DType::kBF16)), 32);  // K must be whole chunks of 32
  EXPECT_EQ(find_matmul_kernel(interleaved(DType::kBF16), 48, Isa::kScalar, kBf16), nullptr);
  const auto* src = reinterpret_cast<const uint16_t*>(w.plain.bytes.data());
  const auto* out = static_cast<const uint16_t*>(w.view.data);
  for (int64_t n = 0; n < 48; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      const uint16_t got = out[(n / 16) * 16 * K + (k / 2) * 32 + (n % 16) * 2 + k % 2];
      ASSERT_EQ(got, n < N ? src[n * K + k] : 0) << "n=" << n << " k=" << k;
    }
  }
  EXPECT_THROW(interleave_rows(DType::kBF16, src, N, 48, nullptr), InvalidArgument);
  EXPECT_EQ(default_matmul_precision(kernels::interleaved(DType::kBF16), detected_isa()), kBf16);
}

TEST(Bf16x16Matmul, ReferencePackerMatchesTheAvx512PackerBitwise) {
  if (!cpu_features().avx512_bf16) GTEST_SKIP() << testing::without("AVX512_BF16", "the AVX-512 packer did not run; the reference packer fed the AVX2 twin of the kernel");
  std::mt19937 rng(6);
  for (int64_t K : {1, 17, 32, 33, 100}) {
    const int64_t M = 3, stride = K + 2;
    auto x = random_floats(static_cast<size_t>(M * stride), rng, 4.0f);
    x[0] = 1.0f + 0x1p-8f;                                         // a tie
    x[1 % K] = std::bit_cast<float>(0x00000123u);                  // a subnormal: flushed to +0
    x[static_cast<size_t>(stride)] = -std::bit_cast<float>(0x00400000u);  // a negative subnormal: -0
    x[static_cast<size_t>(stride + K - 1)] = std::numeric_limits<float>::quiet_NaN();
    std::vector<uint16_t> want(bf16_activation_bytes(M, K) / 2 + 32), got(want.size() + 32);
    auto* aligned = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(got.data()) + 63) / 64 * 64);
    pack_x_bf16_reference(x.data(), stride, M, K, want.data());
    x86::pack_x_bf16_avx512(x.data(), stride, M, K, aligned);
    for (size_t i = 0; i < bf16_activation_bytes(M, K) / 2; ++i) ASSERT_EQ(aligned[i], want[i]) << "K=" << K << " i=" << i;
  }
}

TEST(Bf16x16Matmul, EveryKernelGivesTheReferenceBitsAndTheExactProductWithinRounding) {
  std::mt19937 rng(7);
  const struct {
    int64_t M, N, K;
  } shapes[] = {{1, 1, 32}, {1, 16, 64}, {2, 17, 96}, {3, 31, 160}, {4, 64, 128}, {5, 40, 128}, {9, 33, 1024},
                {1, 100, 896}, {17, 50, 224}, {33, 20, 64}, {7, 65, 4864}};
  for (const auto& s : shapes) {
    const auto w = testing::random_bf16x16(s.N, s.K, rng);
    const int64_t stride = s.K + 3;
    const auto x = random_floats(static_cast<size_t>(s.M * stride), rng, 3.0f);
    const auto bias = random_floats(static_cast<size_t>(s.N), rng);
    const auto xr = bf16_rounded(x);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const auto want = run_matmul(x, stride, s.M, w.view, b, {Isa::kScalar, kBf16});
      const auto exact = testing::oracle(xr, stride, s.M, w.plain.dequantized, s.N, s.K, b);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_LE(std::fabs(want[i] - exact.y[i]), testing::tolerance(exact.magnitude[i], s.K)) << trace(Isa::kScalar, s.M, s.N, s.K) << " output " << i;
      for (Isa isa : available_isas()) {
        if (runs_vdpbf16ps(isa)) {
          ASSERT_TRUE(same_bits(run_matmul(x, stride, s.M, w.view, b, {isa, kBf16}), want)) << trace(isa, s.M, s.N, s.K);
        }
      }
    }
  }
}

TEST(Bf16x16Matmul, RowsDoNotDependOnTheBatchOrOnTheSplitOfN) {
  std::mt19937 rng(8);
  const int64_t M = 37, N = 45, K = 512;
  const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
  const auto w = testing::random_bf16x16(N, K, rng);
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(trace(isa, M, N, K));
    const MatmulOptions options{isa, kBf16};
    const auto batch = run_matmul(x, K, M, w.view, nullptr, options);
    ASSERT_EQ(testing::first_batch_dependence(x, K, M, w.view, options, batch, {2, 3, 4, 5, 8, 9, 16}), "");
    auto split = testing::run_in_group_splits(x, K, M, w.view, options);
    EXPECT_EQ(split.plan.row_group, kInterleaveRows);
    ASSERT_TRUE(same_bits(split.y, batch));
    EXPECT_THROW(split.plan.run_rows(8, 16), InvalidArgument);
  }
}

// Overflow to infinity, cancellation, subnormal weights and x (read as zero), a NaN in x (only its
// row becomes NaN), an all-zero row: the reference's bits everywhere.
TEST(Bf16x16Matmul, ExtremeValuesMatchTheReference) {
  std::mt19937 rng(9);
  const int64_t M = 6, N = 19, K = 96;
  auto plain = testing::random_weights(DType::kBF16, N, K, rng);
  auto* wv = reinterpret_cast<uint16_t*>(plain.bytes.data());
  for (int64_t i = 0; i < N * K; i += 3) wv[i] = f32_to_bf16(i % 2 == 0 ? 3.0e38f : -1.0e-39f);  // huge; subnormal
  for (int64_t i = 1; i < N * K; i += 7) wv[i] = static_cast<uint16_t>(0x0001 + (i & 0x8000));      // tiny subnormal
  const auto interleaved = testing::interleave_bf16(plain.bytes.data(), N, K);
  const TensorView& view = interleaved.view;
  std::vector<float> x(static_cast<size_t>(M * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 5 == 0 ? -1.0f : 1.0f) * static_cast<float>(i % 11) * 7.0e3f;
  for (int64_t k = 0; k < K; k += 4) x[static_cast<size_t>(K + k)] = 1.0e-39f;  // subnormal x
  x[static_cast<size_t>(2 * K + 40)] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(4 * K + k)] = 0.0f;
  const auto want = run_matmul(x, K, M, view, nullptr, {Isa::kScalar, kBf16});
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_TRUE(std::isnan(want[static_cast<size_t>(2 * N + n)])) << n;
    EXPECT_EQ(want[static_cast<size_t>(4 * N + n)], 0.0f) << n;
  }
  for (Isa isa : available_isas()) {
    if (runs_vdpbf16ps(isa)) {
      EXPECT_TRUE(same_bits(run_matmul(x, K, M, view, nullptr, {isa, kBf16}), want)) << trace(isa, M, N, K);
    }
  }
}

// DAZ: a subnormal x against huge weights, and subnormal weights against a huge x, contribute 0
// (without DAZ each product alone would be a normal number: 1e-39 * 1e30 = 1e-9).
TEST(Bf16x16Matmul, SubnormalInputsReadAsZero) {
  const int64_t N = 16, K = 32;
  std::vector<uint16_t> w(static_cast<size_t>(N * K), f32_to_bf16(1.0e30f));
  for (int64_t k = 0; k < K; ++k) w[static_cast<size_t>(K + k)] = 0x0001;  // row 1: the smallest subnormal
  const auto interleaved = testing::interleave_bf16(w.data(), N, K);
  const TensorView& view = interleaved.view;
  std::vector<float> x(static_cast<size_t>(2 * K), 1.0e-39f);  // row 0: subnormal
  for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(K + k)] = 1.0e38f;  // row 1: huge
  for (Isa isa : available_isas()) {
    const auto y = run_matmul(x, K, 2, view, nullptr, {isa, kBf16});
    EXPECT_EQ(y[0], 0.0f) << isa_name(isa);      // subnormal x, huge w
    EXPECT_EQ(y[N + 1], 0.0f) << isa_name(isa);  // huge x, subnormal w
    EXPECT_TRUE(std::isinf(y[N])) << isa_name(isa);  // huge x, huge w: overflow
  }
}

// FTZ: normal inputs whose products (and their sums) are subnormal give +-0, on every ISA that runs
// vdpbf16ps or spells it out (AVX2 under MXCSR FTZ).
TEST(Bf16x16Matmul, SubnormalResultsFlushToZero) {
  const int64_t N = 16, K = 32;
  std::vector<uint16_t> w(static_cast<size_t>(N * K), f32_to_bf16(1.0e-20f));
  for (int64_t k = 0; k < K; ++k) w[static_cast<size_t>(K + k)] = f32_to_bf16(k % 2 == 0 ? 1.0e-20f : -1.0e-20f);
  const auto interleaved = testing::interleave_bf16(w.data(), N, K);
  const std::vector<float> x(static_cast<size_t>(K), 1.0e-19f);  // each product ~1e-39: subnormal
  for (Isa isa : available_isas()) {
    if (!runs_vdpbf16ps(isa)) continue;
    const auto y = run_matmul(x, K, 1, interleaved.view, nullptr, {isa, kBf16});
    EXPECT_EQ(y[0], 0.0f) << isa_name(isa);
    EXPECT_EQ(y[1], 0.0f) << isa_name(isa);
  }
}

// Rows of x prepared in pieces (as a thread team does: reserve_activations, then
// prepare_activation_rows per range) give the bytes and outputs of one prepare_activations call, for
// every activation format (all hold x row by row): bf16 (bf16x16 weights), int8 unsigned (Q8_0) and
// signed (Q8_0x16), Q8_K (Q4_K); plans over the same x share one buffer; f32 needs none.
TEST(Bf16x16Matmul, ActivationRowsPreparedInPiecesEqualOneCall) {
  std::mt19937 rng(10);
  const int64_t M = 7, N = 40, K = 256;
  const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
  const auto check = [&](const TensorView& a, const TensorView& b, MatmulPrecision precision) {
    SCOPED_TRACE(dtype_name(a.dtype));
    std::vector<float> y_whole(static_cast<size_t>(2 * M * N)), y_rows(y_whole.size());
    const MatmulOptions options{std::nullopt, precision};
    const auto plans_for = [&](std::vector<float>& y) {
      return std::array<MatmulPlan, 2>{plan_matmul(x.data(), K, M, a, y.data(), N, nullptr, options),
                                       plan_matmul(x.data(), K, M, b, y.data() + M * N, N, nullptr, options)};
    };
    auto whole = plans_for(y_whole);
    ASSERT_NE(whole[0].xq_row_bytes, 0u);
    prepare_activations(whole, test_activations());
    const std::vector<uint8_t> whole_bytes(static_cast<const uint8_t*>(whole[0].args.xq),
                                           static_cast<const uint8_t*>(whole[0].args.xq) + whole[0].xq_bytes);
    for (auto& p : whole) p.run_rows(0, N);
    auto rows = plans_for(y_rows);
    ASSERT_TRUE(reserve_activations(rows, test_activations()));
    EXPECT_EQ(rows[1].args.xq, rows[0].args.xq);  // same x: one buffer
    std::memset(const_cast<void*>(rows[0].args.xq), 0xAB, rows[0].xq_bytes);
    for (auto [m0, m1] : {std::pair<int64_t, int64_t>{4, 7}, {0, 1}, {1, 4}}) prepare_activation_rows(rows, m0, m1);
    ASSERT_EQ(std::memcmp(rows[0].args.xq, whole_bytes.data(), whole_bytes.size()), 0);
    for (auto& p : rows) p.run_rows(0, N);
    EXPECT_TRUE(same_bits(y_rows, y_whole));
  };
  const auto bf16_a = testing::random_bf16x16(N, K, rng), bf16_b = testing::random_bf16x16(N, K, rng);
  check(bf16_a.view, bf16_b.view, MatmulPrecision::kBf16Activations);
  const auto q8_a = testing::random_weights(DType::kQ8_0, N, K, rng), q8_b = testing::random_weights(DType::kQ8_0, N, K, rng);
  check(q8_a.view, q8_b.view, MatmulPrecision::kInt8Activations);
  std::vector<uint8_t> interleaved[2];
  TensorView interleaved_view[2];
  for (int i = 0; i < 2; ++i) {
    interleaved[i].resize(interleaved_bytes(DType::kQ8_0, N, K) + 64);
    auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(interleaved[i].data()) + 63) / 64 * 64);
    interleave_rows(DType::kQ8_0, (i == 0 ? q8_a : q8_b).view.data, N, K, aligned);
    interleaved_view[i] = TensorView{aligned, DType::kQ8_0, Shape{N, K}, RowLayout::kInterleaved16};
  }
  check(interleaved_view[0], interleaved_view[1], MatmulPrecision::kInt8Activations);

  const auto q4k_a = testing::random_weights(DType::kQ4_K, N, K, rng), q4k_b = testing::random_weights(DType::kQ4_K, N, K, rng);
  check(q4k_a.view, q4k_b.view, MatmulPrecision::kInt8Activations);

  std::vector<float> y(static_cast<size_t>(M * N));
  const auto f32 = testing::random_weights(DType::kF32, N, K, rng);
  std::array<MatmulPlan, 1> plan{plan_matmul(x.data(), K, M, f32.view, y.data(), N, nullptr, {std::nullopt, MatmulPrecision::kF32Activations})};
  EXPECT_FALSE(reserve_activations(plan, test_activations()));
}

}  // namespace
}  // namespace lemma::kernels
