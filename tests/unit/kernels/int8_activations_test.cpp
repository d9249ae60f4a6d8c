// Int8 activations for GGUF Q8_0/Q4_0/Q5_0 weights (int8_activations.h, llama.cpp's Q8_0 dot): the
// quantisers of every ISA write the reference's bytes, every kernel gives the reference kernel's
// bits on random and odd shapes and extreme values, results stay within the quantisation error
// bound of the exact product, and no row depends on M, on the other rows or on how N is split.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/int8_activations.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/quant_blocks.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::oracle;
using testing::run_matmul;
using testing::random_floats;
using testing::same_bits;

constexpr auto kInt8 = MatmulPrecision::kInt8Activations;
constexpr DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0};

std::string trace(DType type, Isa isa, int64_t M, int64_t N, int64_t K) {
  return std::string(dtype_name(type)) + " " + std::string(isa_name(isa)) + " M=" + std::to_string(M) +
         " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

// Random blocks of `type` with sane scales; Q8_0 codes span -128..127 (-128 is legal in the format
// even if quantizers never write it). `zero_every`: every such block is all-zero codes.
testing::Weights weights(DType type, int64_t N, int64_t K, std::mt19937& rng, int zero_every = 0) {
  testing::Weights w = testing::random_weights(type, N, K, rng);
  const DTypeInfo& info = dtype_info(type);
  const int64_t blocks = N * K / kInt8ActivationBlock;
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* block = w.bytes.data() + b * static_cast<int64_t>(info.block_bytes);
    if (zero_every > 0 && b % zero_every == 0) {
      const uint8_t zero_code = type == DType::kQ8_0 ? 0 : type == DType::kQ4_0 ? 0x88 : 0;
      std::memset(block + 2, zero_code, info.block_bytes - 2);
      if (type == DType::kQ5_0) {  // q = 16 -> value 0: high bit set, nibble 0
        std::memset(block + 2, 0xFF, 4);
        std::memset(block + 6, 0x00, 16);
      }
    }
  }
  w.view = TensorView{w.bytes.data(), type, Shape{N, K}};
  const auto row_bytes = static_cast<int64_t>(*dtype_bytes(type, static_cast<uint64_t>(K)));
  for (int64_t n = 0; n < N; ++n) dequantize_row(type, w.bytes.data() + n * row_bytes, w.dequantized.data() + n * K, K);
  return w;
}

// The quantiser of every ISA (the registry rows name them) writes the reference's bytes.
TEST(Int8Activations, EveryQuantiserWritesTheReferenceBytes) {
  std::mt19937 rng(5);
  const int64_t M = 5, K = 160, stride = K + 7;
  std::vector<float> x = random_floats(static_cast<size_t>(M * stride), rng, 4.0f);
  // Extremes: a zero block, a subnormal block (1/d overflows), halves that round to even, huge
  // values, infinities and NaN, one lone non-zero value.
  for (int j = 0; j < 32; ++j) {
    x[static_cast<size_t>(j)] = 0.0f;
    x[static_cast<size_t>(32 + j)] = (j % 2 ? -1.0f : 1.0f) * 1e-41f * static_cast<float>(j);
    x[static_cast<size_t>(64 + j)] = 127.0f - static_cast<float>(j) - 0.5f;
    x[static_cast<size_t>(stride + j)] = j % 3 ? 3e38f : -3e38f;
    x[static_cast<size_t>(stride + 64 + j)] = 0.0f;
  }
  x[static_cast<size_t>(stride + 32)] = std::numeric_limits<float>::infinity();
  x[static_cast<size_t>(stride + 96 + 5)] = std::numeric_limits<float>::quiet_NaN();
  x[static_cast<size_t>(stride + 64 + 9)] = -2.5f;
  auto aligned = [](std::vector<uint8_t>& v) {
    const auto address = reinterpret_cast<uintptr_t>(v.data());
    return v.data() + (64 - address % 64) % 64;
  };
  // What `reference` (a scalar registry row) writes for x, and how many quantisers of its format
  // (same buffer size function) on this machine write the same bytes.
  const auto check_format = [&](const MatmulKernel* reference, std::vector<uint8_t>& want) {
    const size_t bytes = reference->xq_bytes(M, K);
    want.assign(bytes + 64, 0);
    reference->quantize_x(x.data(), stride, M, K, aligned(want));
    std::vector<uint8_t> got(bytes + 64);
    int checked = 0;
    for (const MatmulKernel& k : matmul_kernels()) {
      // Same format only (bf16 packers: bf16_matmul_test.cpp; K-quants' Q8_K: q8k_activations_test.cpp).
      if (k.quantize_x == nullptr || k.xq_bytes != reference->xq_bytes || k.isa > detected_isa()) continue;
      std::fill(got.begin(), got.end(), 0xAB);
      k.quantize_x(x.data(), stride, M, K, aligned(got));
      EXPECT_EQ(0, std::memcmp(aligned(got), aligned(want), bytes)) << k.name;
      ++checked;
    }
    return checked;
  };
  const MatmulKernel* reference = find_matmul_kernel(DType::kQ8_0, K, Isa::kScalar, kInt8);
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(reference->quantize_x, nullptr);
  std::vector<uint8_t> want;
  EXPECT_GE(check_format(reference, want), 3);
  // Spot checks of the rule itself: zero block, rounding half to even, NaN scale.
  const float* scales = int8_scales(aligned(want), K, 0);
  EXPECT_EQ(scales[0], 0.0f);
  EXPECT_EQ(int8_codes(aligned(want), K, 0)[0], 128);
  EXPECT_TRUE(std::isnan(int8_scales(aligned(want), K, 1)[3]));
  EXPECT_EQ(int8_codes(aligned(want), K, 1)[64 + 9], 128 - 127);  // the lone value is the block's max
  // The signed form the interleaved kernels read (interleaved_blocks.h: codes made signed, block
  // sums appended), whichever way a quantiser gets there.
  const MatmulKernel* signed_reference = find_matmul_kernel(kernels::interleaved(DType::kQ8_0), K, Isa::kScalar, kInt8);
  ASSERT_NE(signed_reference, nullptr);
  std::vector<uint8_t> want_signed;
  EXPECT_GE(check_format(signed_reference, want_signed), 2);
  EXPECT_EQ(int8_signed_codes(aligned(want_signed), K, 1)[64 + 9], -127);
  EXPECT_EQ(int8_block_sums(aligned(want_signed), K, 1)[2], -127);
  // W8A8x16's: the same layout by W8A8's per-row rule (one scale per row in every block's entry).
  const MatmulKernel* w8a8_reference = find_matmul_kernel(kernels::interleaved(DType::kW8A8), K, Isa::kScalar, kInt8);
  ASSERT_NE(w8a8_reference, nullptr);
  std::vector<uint8_t> want_w8a8;
  EXPECT_GE(check_format(w8a8_reference, want_w8a8),
            1 + (detected_isa() >= Isa::kAvx2) + (cpu_features().avx512_vnni && detected_isa() >= Isa::kAvx512));
  const float* row0 = int8_signed_scales(aligned(want_w8a8), K, 0);
  EXPECT_EQ(row0[0], row0[K / 32 - 1]);  // one scale per row
  float amax = 0.0f;  // row 2 by the rule: q = clamp(round_half_even(x * 127 / amax), -127, 127)
  for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(x[static_cast<size_t>(2 * stride + k)]));
  const int q0 = std::clamp(static_cast<int>(std::nearbyint(x[static_cast<size_t>(2 * stride)] * (127.0f / amax))), -127, 127);
  EXPECT_EQ(int8_signed_codes(aligned(want_w8a8), K, 2)[0], q0);
  EXPECT_EQ(int8_signed_scales(aligned(want_w8a8), K, 2)[1], amax / 127.0f);
}

// Every ISA's kernel equals the reference kernel bitwise; the reference is within the quantisation
// error bound of the exact product: per value |x - d_x q| <= d (1/2 + 127 * 2^-11) with d = amax/127.
TEST(Int8Activations, EveryKernelEqualsTheReferenceBitwiseOnOddShapes) {
  std::mt19937 rng(17);
  for (DType type : kTypes) {
    for (int64_t K : {32, 64, 96, 160, 1056}) {
      for (int64_t M : {1, 2, 3, 4, 5, 7, 13, 37}) {
        for (int64_t N : {1, 2, 3, 5, 13, 33}) {
          const int64_t x_stride = K + 3;
          auto x = random_floats(static_cast<size_t>(M * x_stride), rng, 3.0f);
          for (int64_t k = 0; k < 32; ++k) x[static_cast<size_t>(k)] = 0.0f;  // a zero activation block
          const auto w = weights(type, N, K, rng, 3);
          const auto bias = random_floats(static_cast<size_t>(N), rng);
          const auto want = run_matmul(x, x_stride, M, w.view, bias.data(), {Isa::kScalar, kInt8});
          const auto ref = oracle(x, x_stride, M, w.dequantized, N, K, bias.data());
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t n = 0; n < N; ++n) {
              double bound = 1e-5 * ref.magnitude[static_cast<size_t>(m * N + n)] + 1e-6;
              for (int64_t b = 0; b < K / 32; ++b) {
                double amax = 0.0, wsum = 0.0;
                for (int64_t j = 0; j < 32; ++j) {
                  amax = std::max(amax, std::fabs(static_cast<double>(x[static_cast<size_t>(m * x_stride + b * 32 + j)])));
                  wsum += std::fabs(static_cast<double>(w.dequantized[static_cast<size_t>(n * K + b * 32 + j)]));
                }
                bound += wsum * amax / 127.0 * (0.5 + 127.0 / 2048.0);
              }
              const size_t i = static_cast<size_t>(m * N + n);
              ASSERT_NEAR(want[i], ref.y[i], bound) << trace(type, Isa::kScalar, M, N, K) << " m=" << m << " n=" << n;
            }
          }
          for (Isa isa : available_isas()) {
            if (isa == Isa::kScalar) continue;
            ASSERT_TRUE(same_bits(run_matmul(x, x_stride, M, w.view, bias.data(), {isa, kInt8}), want)) << trace(type, isa, M, N, K);
          }
        }
      }
    }
  }
}

// Extreme values: weights at the format's limits (Q8_0 -128 and 127 codes, max f16 scales), x at
// the edge of f16 scales; NaN in x reaches exactly the outputs that read its block.
TEST(Int8Activations, ExtremeValuesMatchTheReference) {
  std::mt19937 rng(23);
  for (DType type : kTypes) {
    const int64_t M = 6, N = 7, K = 96;
    auto w = weights(type, N, K, rng);
    const DTypeInfo& info = dtype_info(type);
    for (int64_t b = 0; b < N * K / 32; ++b) {
      uint8_t* block = w.bytes.data() + b * static_cast<int64_t>(info.block_bytes);
      if (b % 2 == 0) {
        const uint16_t big = f32_to_f16(60000.0f);
        std::memcpy(block, &big, 2);
        std::memset(block + (type == DType::kQ8_0 ? 2 : type == DType::kQ4_0 ? 2 : 6), b % 4 == 0 ? 0x80 : 0x7F,
                    type == DType::kQ8_0 ? 32 : 16);
      }
    }
    std::vector<float> x(static_cast<size_t>(M * K));
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 5 == 0 ? -1.0f : 1.0f) * static_cast<float>(i % 11) * 7.0e3f;
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(5 * K + k)] *= 1e4f;  // d_x overflows f16: inf
    x[static_cast<size_t>(2 * K + 40)] = std::numeric_limits<float>::quiet_NaN();  // row 2, block 1
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(4 * K + k)] = 1e-40f;    // a subnormal row
    const auto want = run_matmul(x, K, M, w.view, nullptr, {Isa::kScalar, kInt8});
    for (int64_t n = 0; n < N; ++n) EXPECT_TRUE(std::isnan(want[static_cast<size_t>(2 * N + n)])) << n;
    for (int64_t n = 0; n < N; ++n) EXPECT_FALSE(std::isnan(want[static_cast<size_t>(3 * N + n)])) << n;
    for (Isa isa : available_isas()) {
      if (isa == Isa::kScalar) continue;
      EXPECT_TRUE(same_bits(run_matmul(x, K, M, w.view, nullptr, {isa, kInt8}), want)) << trace(type, isa, M, N, K);
    }
  }
}

// Batch invariance: a row alone, as a prefix, or in a batch with other rows; and any split of N
// through plan_matmul() + run_rows() (how a thread team runs tiles) gives the same bits.
TEST(Int8Activations, RowsDoNotDependOnTheBatchOrOnTheSplitOfN) {
  std::mt19937 rng(29);
  for (DType type : kTypes) {
    const int64_t M = 37, N = 45, K = 1024;
    const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
    const auto w = weights(type, N, K, rng);
    for (Isa isa : available_isas()) {
      SCOPED_TRACE(trace(type, isa, M, N, K));
      const MatmulOptions options{isa, kInt8};
      const auto batch = run_matmul(x, K, M, w.view, nullptr, options);
      ASSERT_EQ(testing::first_batch_dependence(x, K, M, w.view, options, batch, {2, 3, 4, 5, 16, 32}), "");
      std::vector<float> tiled(batch.size(), -1.0f);
      MatmulPlan plan = plan_matmul(x.data(), K, M, w.view, tiled.data(), N, nullptr, options);
      prepare_activations(std::span(&plan, 1), test_activations());
      for (int64_t n0 = N; n0 > 0; n0 -= 7) plan.run_rows(std::max<int64_t>(0, n0 - 7), n0);  // last tile first
      ASSERT_TRUE(same_bits(tiled, batch));
    }
  }
}

TEST(Int8Activations, DefaultFromAvx2UpAndNamed) {
  for (DType type : kTypes) {
    const std::string name(dtype_name(type));
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(default_matmul_precision(type, Isa::kScalar), MatmulPrecision::kF32Activations);
    EXPECT_EQ(kernel_name_for(type, 64, Isa::kScalar, kInt8), "reference_" + lower + "_int8");
    if (cpu_features().avx2) {
      EXPECT_EQ(default_matmul_precision(type, Isa::kAvx2), kInt8);
      EXPECT_EQ(kernel_name_for(type, 64, Isa::kAvx2, kInt8), "avx2_" + lower + "_int8");
    }
    if (cpu_features().avx512) {
      EXPECT_EQ(default_matmul_precision(type, Isa::kAvx512), kInt8);
      EXPECT_EQ(kernel_name_for(type, 64, Isa::kAvx512, kInt8), std::string(cpu_features().avx512_vnni ? "avx512_vnni_" : "avx2_") + lower + "_int8");  // VNNI is checked once, in the kernel set
      EXPECT_EQ(kernel_name_for(type, 64, Isa::kAvx512), "avx512_" + lower);  // f32 when asked for it
    }
  }
  for (DType other : {DType::kF32, DType::kQ4_1, DType::kQ5_1, DType::kW8A8}) {  // bf16: bf16_matmul_test.cpp
    for (Isa isa : available_isas()) EXPECT_EQ(default_matmul_precision(other, isa), MatmulPrecision::kF32Activations);
  }
  EXPECT_EQ(kernel_name_for(DType::kF32, 64, Isa::kScalar, kInt8), "reference_f32");  // falls back
}

// Plans over one x (q/k/v) share one quantised copy; a plan over another x gets its own.
TEST(Int8Activations, PlansOverOneXShareItsQuantisedCopy) {
  std::mt19937 rng(31);
  const int64_t M = 3, N = 5, K = 64;
  const auto x = random_floats(static_cast<size_t>(M * K), rng);
  const auto x2 = random_floats(static_cast<size_t>(M * K), rng);
  const auto w = weights(DType::kQ4_0, N, K, rng);
  std::vector<float> y(static_cast<size_t>(4 * M * N));
  for (Isa isa : available_isas()) {
    const MatmulOptions options{isa, kInt8};
    MatmulPlan plans[3] = {plan_matmul(x.data(), K, M, w.view, y.data(), N, nullptr, options),
                           plan_matmul(x.data(), K, M, w.view, y.data() + M * N, N, nullptr, options),
                           plan_matmul(x2.data(), K, M, w.view, y.data() + 2 * M * N, N, nullptr, options)};
    ASSERT_NE(plans[0].quantize_x, nullptr);
    prepare_activations(plans, test_activations());
    EXPECT_EQ(plans[0].args.xq, plans[1].args.xq);
    EXPECT_NE(plans[0].args.xq, plans[2].args.xq);
    for (auto& p : plans) p.run_rows(0, N);
    const auto alone = run_matmul(x2, K, M, w.view, nullptr, options);
    EXPECT_EQ(0, std::memcmp(alone.data(), y.data() + 2 * M * N, alone.size() * sizeof(float))) << isa_name(isa);
    MatmulPlan unprepared = plan_matmul(x.data(), K, M, w.view, y.data(), N, nullptr, options);
    EXPECT_THROW(unprepared.run_rows(0, N), InvalidArgument);
  }
}

TEST(ActivationPolicy, F32ForcesTheF32ActivationKernels) {
  constexpr auto kF32 = ActivationPolicy::kF32;
  for (Isa isa : available_isas()) {
    for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K, DType::kBF16}) {
      EXPECT_EQ(default_matmul_precision(type, isa, kF32), MatmulPrecision::kF32Activations)
          << dtype_name(type) << " " << isa_name(isa);
    }
    // Matrices re-laid for int8 kernels stay in the file's layout; f16 (f32 x either way) still moves.
    EXPECT_FALSE(interleave_pays(DType::kQ8_0, isa, kF32));
    EXPECT_FALSE(interleave_pays(DType::kBF16, isa, kF32));
    EXPECT_EQ(interleave_pays(DType::kF16, isa, kF32), isa >= Isa::kAvx2);
  }
}

}  // namespace
}  // namespace lemma::kernels
