// The AMX-BF16 kernel for interleaved bf16x16 weights (x86/amx/bf16x16_amx_kernel.h). On the tile
// emulator (every machine) it gives, bit for bit, the scalar model of TDPBF16PS in the kernel's order
// (matmul_bf16x16_tdpbf16ps_reference: every pair in k order, even product first) and stays within
// the proven rounding bound of the exact product on odd shapes (partial 16-row tiles of x and groups
// of W, K across W's cache blocks, strided x, bias); no row depends on M or on the other rows; row
// ranges on group edges give the whole call's bits; NaN, overflow, DAZ and FTZ behave as the model
// says. On AMX hardware (skipped without AMX) the same cases, except that the hardware's rounding
// inside TDPBF16PS is not pinned down by the SDM: there the bound and the invariances must hold,
// and equality with the model is reported, not required.
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/reference/interleaved_bf16.h"
#include "lemma/kernels/registry.h"
#include "lemma/kernels/x86/amx/amx_bf16.h"
#include "bf16x16_test_util.h"
#include "hardware_paths.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::random_floats;
using testing::same_bits;

constexpr auto kBf16 = MatmulPrecision::kBf16Activations;

// One instantiation of the kernel; `model_bits`: whether it must give the model's bits.
struct Backend {
  MatmulFn fn;
  bool model_bits;
};
constexpr Backend kEmulated{x86::matmul_bf16x16_amx_emulated, true};
constexpr Backend kHardware{x86::matmul_bf16x16_amx, false};

std::string trace(int64_t M, int64_t N, int64_t K) {
  return "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

// A plan for `fn` as matmul() would make it for a bf16x16 kernel: the scalar row resolves the packer,
// the buffer size and the row grouping; `fn` replaces its kernel (the emulated one has no row).
MatmulPlan plan_for(MatmulFn fn, const std::vector<float>& x, int64_t stride, int64_t M, const TensorView& w,
                    std::vector<float>& y, const float* bias) {
  MatmulPlan plan = plan_matmul(x.data(), stride, M, w, y.data(), w.shape[0], bias, {Isa::kScalar, kBf16});
  plan.fn = fn;
  prepare_activations(std::span(&plan, 1), test_activations());
  return plan;
}
std::vector<float> run(MatmulFn fn, const std::vector<float>& x, int64_t stride, int64_t M, const TensorView& w,
                       const float* bias) {
  std::vector<float> y(static_cast<size_t>(M * w.shape[0]), -1.0f);
  plan_for(fn, x, stride, M, w, y, bias).run_rows(0, w.shape[0]);
  return y;
}

// Bit-equal to the model where the backend must be; otherwise says so once if it is not.
void expect_model_bits(const Backend& backend, const std::vector<float>& got, const std::vector<float>& model,
                       const std::string& where) {
  if (backend.model_bits) {
    EXPECT_TRUE(same_bits(got, model)) << where;
  } else if (!same_bits(got, model)) {
    std::printf("note: hardware TDPBF16PS differs from the SDM model's bits (%s)\n", where.c_str());
  }
}

void expect_model_bits_within_bound(const Backend& backend) {
  std::mt19937 rng(61);
  // Partial and whole 16-row tiles of x (1, 15, 16, 17, 33, 40: 2x2 and 1x3 tile shapes), partial
  // groups and odd group counts, K from one step to 152 (N=100, K=4864 spans two cache blocks).
  const struct {
    int64_t M, N, K;
  } shapes[] = {{1, 1, 32},     {1, 16, 64},   {2, 17, 96},   {15, 31, 160}, {16, 48, 256},  {17, 33, 544},
                {33, 100, 896}, {5, 40, 1056}, {40, 65, 4864}, {1, 100, 4864}, {32, 80, 128}, {3, 97, 320}};
  for (const auto& s : shapes) {
    const auto w = testing::random_bf16x16(s.N, s.K, rng);
    const int64_t stride = s.K + 3;
    const auto x = random_floats(static_cast<size_t>(s.M * stride), rng, 3.0f);
    const auto bias = random_floats(static_cast<size_t>(s.N), rng);
    const auto xr = testing::bf16_rounded(x);
    for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
      const std::string where = trace(s.M, s.N, s.K) + (b != nullptr ? " bias" : "");
      const auto got = run(backend.fn, x, stride, s.M, w.view, b);
      const auto exact = testing::oracle(xr, stride, s.M, w.plain.dequantized, s.N, s.K, b);
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_LE(std::fabs(got[i] - exact.y[i]), testing::tolerance(exact.magnitude[i], s.K)) << where << " output " << i;
      expect_model_bits(backend, got, run(matmul_bf16x16_tdpbf16ps_reference, x, stride, s.M, w.view, b), where);
    }
  }
}

// A row alone, a prefix of rows, or the whole batch: the same bits. Row ranges that start on group
// edges (in any order, grouping W's 16-row groups differently from the whole call) too.
void expect_batch_and_split_invariance(MatmulFn fn) {
  std::mt19937 rng(67);
  const int64_t M = 37, N = 83, K = 640;
  const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
  const auto w = testing::random_bf16x16(N, K, rng);
  const auto bias = random_floats(static_cast<size_t>(N), rng);
  const auto rows = [&](const std::vector<float>& xs, int64_t count) { return run(fn, xs, K, count, w.view, nullptr); };
  const auto batch = rows(x, M);
  EXPECT_EQ(testing::first_batch_dependence_of(rows, x, K, M, N, batch, {2, 15, 16, 17, 32, 33}), "") << trace(M, N, K);
  const auto whole = run(fn, x, K, M, w.view, bias.data());
  std::vector<float> split(whole.size(), -1.0f);
  const MatmulPlan plan = plan_for(fn, x, K, M, w.view, split, bias.data());
  EXPECT_EQ(plan.row_group, kInterleaveRows);
  for (const auto& [n0, n1] : {std::pair<int64_t, int64_t>{80, 83}, {16, 48}, {48, 80}, {0, 16}}) plan.run_rows(n0, n1);
  EXPECT_TRUE(same_bits(split, whole)) << trace(M, N, K);
}

// NaN in x (only its rows are NaN, also in the padded last tile), overflow to infinity, subnormal x
// and W read as zero (DAZ), subnormal products flushed (FTZ), an all-zero row.
void expect_extremes(const Backend& backend) {
  std::mt19937 rng(71);
  const int64_t M = 19, N = 35, K = 96;
  auto plain = testing::random_weights(DType::kBF16, N, K, rng);
  auto* wv = reinterpret_cast<uint16_t*>(plain.bytes.data());
  for (int64_t k = 0; k < K; ++k) {
    wv[1 * K + k] = 0x0001;                   // W row 1: the smallest subnormal
    wv[3 * K + k] = f32_to_bf16(1.0e30f);     // W row 3: huge
    wv[4 * K + k] = f32_to_bf16(1.0e-20f);    // W row 4: tiny, normal
  }
  const auto w = testing::interleave_bf16(plain.bytes.data(), N, K);
  std::vector<float> x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
  for (int64_t k = 0; k < K; ++k) {
    x[static_cast<size_t>(0 * K + k)] = 1.0e-39f;  // subnormal
    x[static_cast<size_t>(4 * K + k)] = 1.0e-20f;  // tiny: products 1e-40 with W row 4 (subnormal)
    x[static_cast<size_t>(6 * K + k)] = 0.0f;
  }
  // Huge in one k only: 1e38 at every k against random W would overflow partial sums both ways,
  // and whether that gives +-inf or NaN depends on the order of the sums, which TDPBF16PS does not
  // fix (on Sapphire Rapids such rows came out NaN: the hardware sums a step's products in parallel).
  x[static_cast<size_t>(1 * K + 5)] = 1.0e38f;
  x[static_cast<size_t>(2 * K + 40)] = std::numeric_limits<float>::quiet_NaN();
  x[static_cast<size_t>(17 * K + 7)] = std::numeric_limits<float>::quiet_NaN();  // in the last, partial tile
  const auto y = run(backend.fn, x, K, M, w.view, nullptr);
  const auto at = [&](int64_t m, int64_t n) { return y[static_cast<size_t>(m * N + n)]; };
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n));
      EXPECT_EQ(std::isnan(at(m, n)), m == 2 || m == 17);
      // DAZ: 1e-39 * 1e30 would be 1e-9, 1e38 * 1e-40 about 1e-2.
      if ((m == 0 || m == 6 || n == 1) && m != 2 && m != 17) {
        EXPECT_EQ(at(m, n), 0.0f);
      }
    }
  }
  EXPECT_TRUE(std::isinf(at(1, 3)));  // 1e38 * 1e30
  EXPECT_EQ(at(4, 4), 0.0f);          // FTZ: 96 products of 1e-40 would sum to about 1e-38
  expect_model_bits(backend, y, run(matmul_bf16x16_tdpbf16ps_reference, x, K, M, w.view, nullptr), "extremes");
}

TEST(AmxBf16Matmul, EmulatedKernelGivesTheModelBitsWithinTheRoundingBound) { expect_model_bits_within_bound(kEmulated); }
TEST(AmxBf16Matmul, EmulatedRowsDoNotDependOnTheBatchOrOnTheSplitOfN) { expect_batch_and_split_invariance(kEmulated.fn); }
TEST(AmxBf16Matmul, EmulatedKernelAtExtremes) { expect_extremes(kEmulated); }

// TDPBF16PS adds a pair's even product first, vdpbf16ps its odd one: the two models differ.
TEST(AmxBf16Matmul, ModelDiffersFromTheVdpbf16psReference) {
  std::mt19937 rng(73);
  const int64_t M = 4, N = 32, K = 256;
  const auto w = testing::random_bf16x16(N, K, rng);
  const auto x = random_floats(static_cast<size_t>(M * K), rng);
  EXPECT_FALSE(same_bits(run(matmul_bf16x16_tdpbf16ps_reference, x, K, M, w.view, nullptr),
                         run(matmul_bf16x16_reference, x, K, M, w.view, nullptr)));
}

TEST(AmxBf16Matmul, HardwareKernel) {
  if (!cpu_features().amx) GTEST_SKIP() << testing::without("AMX", "the same kernel ran on the tile emulator instead (AmxBf16Matmul.Emulated*)");
  expect_model_bits_within_bound(kHardware);
  expect_batch_and_split_invariance(kHardware.fn);
  expect_extremes(kHardware);
}

// Isa::kAmx picks the AMX row for bf16x16 (and Model interleaves bf16 there: bf16 activations are
// the default); through matmul() only where the CPU has AMX.
TEST(AmxBf16Matmul, RegistryChoosesTheAmxKernelOnlyUnderAmx) {
  if (!cpu_features().avx512_bf16) GTEST_SKIP() << testing::without("AVX512_BF16", "no bf16-activation rows to choose from; the AMX-BF16 kernel ran on the tile emulator (AmxBf16Matmul.Emulated*)");
  EXPECT_EQ(kernel_name_for(kernels::interleaved(DType::kBF16), 256, Isa::kAmx, kBf16), "amx_bf16x16");
  EXPECT_EQ(kernel_name_for(kernels::interleaved(DType::kBF16), 256, Isa::kAvx512, kBf16), "avx512_bf16x16_dpbf16");
  EXPECT_EQ(default_matmul_precision(DType::kBF16, Isa::kAmx), kBf16);
  EXPECT_EQ(default_matmul_precision(kernels::interleaved(DType::kBF16), Isa::kAmx), kBf16);
  if (detected_isa() < Isa::kAmx) GTEST_SKIP() << testing::without("AMX", "the Isa::kAmx row cannot run; its kernel ran on the tile emulator instead (AmxBf16Matmul.Emulated*)");
  std::mt19937 rng(79);
  const int64_t M = 21, N = 40, K = 768;
  const auto w = testing::random_bf16x16(N, K, rng);
  const auto x = random_floats(static_cast<size_t>(M * K), rng);
  const MatmulOptions options{Isa::kAmx, kBf16};
  const auto batch = testing::run_matmul(x, K, M, w.view, nullptr, options);
  EXPECT_TRUE(same_bits(batch, run(x86::matmul_bf16x16_amx, x, K, M, w.view, nullptr)));
  EXPECT_EQ(testing::first_batch_dependence(x, K, M, w.view, options, batch, {1, 16, 17}), "");
}

}  // namespace
}  // namespace lemma::kernels
