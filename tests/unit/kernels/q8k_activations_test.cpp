// Int8 activations for GGUF Q4_K/Q5_K/Q6_K/Q2_K/Q3_K weights (q8k_activations.h, llama.cpp's Q8_K dot): the
// quantisers of every ISA write the reference's bytes and the values ggml's rule gives, every
// kernel gives the reference kernel's bits on random and odd shapes and extreme values, results stay
// within the quantisation error bound of the exact product, and no row depends on M, on the other
// rows or on how N is split.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/kernels/q8k_activations.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::oracle;
using testing::run_matmul;
using testing::random_floats;
using testing::same_bits;

constexpr auto kInt8 = MatmulPrecision::kInt8Activations;
constexpr DType kTypes[] = {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ2_K, DType::kQ3_K};

std::string trace(DType type, Isa isa, int64_t M, int64_t N, int64_t K) {
  return std::string(dtype_name(type)) + " " + std::string(isa_name(isa)) + " M=" + std::to_string(M) +
         " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

int64_t row_bytes(DType type, int64_t K) { return static_cast<int64_t>(*dtype_bytes(type, static_cast<uint64_t>(K))); }

// Recomputes the dequantised copy after the test edited the blocks.
void redequantize(testing::Weights& w, DType type, int64_t N, int64_t K) {
  for (int64_t n = 0; n < N; ++n) {
    dequantize_row(type, w.bytes.data() + n * row_bytes(type, K), w.dequantized.data() + n * K, K);
  }
}

// Random blocks (sane f16 scales, every code and scale/min pattern); every `zero_every`-th block
// gets the codes of value 0 (Q6_K u = 32, Q3_K u = 4, else u = 0: only the mins remain).
testing::Weights weights(DType type, int64_t N, int64_t K, std::mt19937& rng, int zero_every = 0) {
  testing::Weights w = testing::random_weights(type, N, K, rng);
  const auto bytes = static_cast<int64_t>(dtype_info(type).block_bytes);
  for (int64_t b = 0; zero_every > 0 && b < N * K / kQ8KBlock; b += zero_every) {
    uint8_t* block = w.bytes.data() + b * bytes;
    switch (type) {
      case DType::kQ6_K:
        std::memset(block, 0x00, 128);       // low nibbles 0
        std::memset(block + 128, 0xAA, 64);  // high bits 2: u = 32
        break;
      case DType::kQ3_K:
        std::memset(block, 0xFF, 32);       // hmask: bit 2 set
        std::memset(block + 32, 0x00, 64);  // low bits 0: u = 4
        break;
      case DType::kQ2_K: std::memset(block + 16, 0, 64); break;
      default: std::memset(block + 16, 0, static_cast<size_t>(bytes - 16)); break;  // Q5_K: qh and qs
    }
  }
  redequantize(w, type, N, K);
  return w;
}

uint8_t* aligned(std::vector<uint8_t>& v) {
  const auto address = reinterpret_cast<uintptr_t>(v.data());
  return v.data() + (64 - address % 64) % 64;
}

// ggml's quantize_row_q8_K, written from its rule: the signed value of largest magnitude (the first
// one) sets iscale = -127 / max; q = min(127, round_half_even(iscale * x)); d = 1 / iscale.
void ggml_rule(const float* x, int8_t* q, float* d) {
  float max = 0.0f, amax = 0.0f;
  for (int j = 0; j < 256; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax == 0.0f) {
    std::fill(q, q + 256, int8_t{0});
    *d = 0.0f;
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < 256; ++j) q[j] = static_cast<int8_t>(std::min(127, static_cast<int>(std::nearbyint(iscale * x[j]))));
  *d = 1.0f / iscale;
}

// The quantiser of every ISA (the registry rows name them) writes the reference's bytes; the
// reference's d_x * q is the float ggml's rule gives for every value of finite blocks.
TEST(Q8KActivations, EveryQuantiserWritesTheReferenceBytesAndGgmlsValues) {
  std::mt19937 rng(5);
  const int64_t M = 5, K = 1024, stride = K + 7;
  std::vector<float> x = random_floats(static_cast<size_t>(M * stride), rng, 4.0f);
  // Extremes: a zero block, a subnormal block, halves that round to even, huge values, an
  // infinity, a NaN, one lone non-zero value.
  for (int j = 0; j < 256; ++j) {
    x[static_cast<size_t>(j)] = 0.0f;
    x[static_cast<size_t>(256 + j)] = (j % 2 ? -1.0f : 1.0f) * 1e-41f * static_cast<float>(j % 32);
    x[static_cast<size_t>(512 + j)] = (j % 2 ? -1.0f : 1.0f) * (127.0f - static_cast<float>(j % 128) - 0.5f);
    x[static_cast<size_t>(stride + j)] = j % 3 ? 3e38f : -3e38f;
    x[static_cast<size_t>(stride + 512 + j)] = 0.0f;
  }
  x[static_cast<size_t>(512 + 7)] = 127.0f;  // amax 127: id = 1, codes are the rounded values
  x[static_cast<size_t>(stride + 256)] = std::numeric_limits<float>::infinity();
  x[static_cast<size_t>(stride + 768 + 5)] = std::numeric_limits<float>::quiet_NaN();
  x[static_cast<size_t>(stride + 512 + 9)] = -2.5f;
  const size_t bytes = q8k_activation_bytes(M, K);
  std::vector<uint8_t> want(bytes + 64), got(bytes + 64);
  const MatmulKernel* reference = find_matmul_kernel(DType::kQ4_K, K, Isa::kScalar, kInt8);
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(reference->quantize_x, nullptr);
  ASSERT_EQ(reference->xq_bytes(M, K), bytes);
  std::memset(aligned(want), 0xAB, bytes);
  reference->quantize_x(x.data(), stride, M, K, aligned(want));
  const void* xq = aligned(want);
  // Spot checks of the rule itself: zero block, half to even, NaN scale, the lone value, sums.
  EXPECT_EQ(q8k_scales(xq, K, 0)[0], 0.0f);
  EXPECT_EQ(q8k_codes(xq, K, 0)[0], 0);
  EXPECT_EQ(q8k_sums(xq, K, 0)[0], 0);
  EXPECT_EQ(q8k_scales(xq, K, 0)[2], 1.0f);
  EXPECT_EQ(q8k_codes(xq, K, 0)[512 + 0], 126);   // 126.5 -> 126
  EXPECT_EQ(q8k_codes(xq, K, 0)[512 + 1], -126);  // -125.5 -> -126
  EXPECT_TRUE(std::isnan(q8k_scales(xq, K, 1)[3]));
  EXPECT_EQ(q8k_codes(xq, K, 1)[512 + 9], -127);
  EXPECT_EQ(q8k_sums(xq, K, 1)[32], -127);  // group 0 of block 2 holds the lone value
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t g = 0; g < K / 16; ++g) {
      int sum = 0;
      for (int64_t j = 0; j < 16; ++j) sum += q8k_codes(xq, K, m)[16 * g + j];
      ASSERT_EQ(q8k_sums(xq, K, m)[g], sum) << "m=" << m << " g=" << g;
    }
    for (int64_t b = 0; b < K / 256; ++b) {
      const float* xb = x.data() + m * stride + b * 256;
      // Skip blocks where ggml's rule is undefined (inf or NaN, or 127 / amax overflows).
      float amax = 0.0f;
      for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(xb[j]));
      if (!std::all_of(xb, xb + 256, [](float v) { return std::isfinite(v); }) || !std::isfinite(127.0f / amax)) continue;
      int8_t q[256];
      float d;
      ggml_rule(xb, q, &d);
      const float ours = q8k_scales(xq, K, m)[b];
      for (int j = 0; j < 256; ++j) {
        ASSERT_EQ(d * static_cast<float>(q[j]), ours * static_cast<float>(q8k_codes(xq, K, m)[b * 256 + j]))
            << "m=" << m << " b=" << b << " j=" << j;
      }
    }
  }
  int checked = 0;
  for (const MatmulKernel& k : matmul_kernels()) {
    if (k.quantize_x == nullptr || k.xq_bytes != reference->xq_bytes || k.isa > detected_isa()) continue;
    std::fill(got.begin(), got.end(), 0xCD);
    k.quantize_x(x.data(), stride, M, K, aligned(got));
    ASSERT_EQ(0, std::memcmp(aligned(got), aligned(want), bytes)) << k.name;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

// Every ISA's kernel equals the reference kernel bitwise; the reference is within the quantisation
// error bound of the exact product: per value |x - d_x q| <= d_x (1/2 + 2^-20), d_x = amax / 127.
TEST(Q8KActivations, EveryKernelEqualsTheReferenceBitwiseOnOddShapes) {
  std::mt19937 rng(17);
  for (DType type : kTypes) {
    for (int64_t K : {256, 512, 768, 2304}) {
      for (int64_t M : {1, 2, 3, 4, 5, 7, 13}) {
        for (int64_t N : {1, 2, 3, 5, 13}) {
          const int64_t x_stride = K + 3;
          auto x = random_floats(static_cast<size_t>(M * x_stride), rng, 3.0f);
          for (int64_t k = 0; k < 256; ++k) x[static_cast<size_t>(k)] = 0.0f;  // a zero activation block
          const auto w = weights(type, N, K, rng, 3);
          const auto bias = random_floats(static_cast<size_t>(N), rng);
          const auto want = run_matmul(x, x_stride, M, w.view, bias.data(), {Isa::kScalar, kInt8});
          const auto ref = oracle(x, x_stride, M, w.dequantized, N, K, bias.data());
          for (int64_t m = 0; m < M; ++m) {
            for (int64_t n = 0; n < N; ++n) {
              double bound = 1e-5 * ref.magnitude[static_cast<size_t>(m * N + n)] + 1e-6;
              for (int64_t b = 0; b < K / 256; ++b) {
                double amax = 0.0, wsum = 0.0;
                for (int64_t j = 0; j < 256; ++j) {
                  amax = std::max(amax, std::fabs(static_cast<double>(x[static_cast<size_t>(m * x_stride + b * 256 + j)])));
                  wsum += std::fabs(static_cast<double>(w.dequantized[static_cast<size_t>(n * K + b * 256 + j)]));
                }
                bound += wsum * amax / 127.0 * (0.5 + 0x1p-20);
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

// Extreme values: every code and scale at the format's limits (largest integer sums), large f16
// scales; x rows at 127 everywhere, overflowing, subnormal, infinite; NaN in x reaches exactly the
// outputs that read its block.
TEST(Q8KActivations, ExtremeValuesMatchTheReference) {
  std::mt19937 rng(23);
  for (DType type : kTypes) {
    const int64_t M = 7, N = 5, K = 512;
    auto w = weights(type, N, K, rng);
    const auto bytes = static_cast<int64_t>(dtype_info(type).block_bytes);
    for (int64_t b = 0; b < N * K / 256; ++b) {
      uint8_t* block = w.bytes.data() + b * bytes;
      if (b % 2 != 0) continue;
      const uint16_t big = f32_to_f16(b % 4 == 0 ? 60000.0f : -3.0f);
      const uint8_t scale_byte = b % 4 == 0 ? 0x00 : 0xFF;  // Q3_K scales -32 or 31
      switch (type) {
        case DType::kQ6_K:
          std::memset(block, 0xFF, 192);  // u = 63
          std::memset(block + 192, b % 4 == 0 ? 0x80 : 0x7F, 16);
          std::memcpy(block + 208, &big, 2);
          break;
        case DType::kQ3_K:
          std::memset(block, 0x00, 32);    // u = 3: value -1
          std::memset(block + 32, 0xFF, 64);
          std::memset(block + 96, scale_byte, 12);
          std::memcpy(block + 108, &big, 2);
          break;
        case DType::kQ2_K:
          std::memset(block, 0xFF, 80);  // scales and mins 15, u = 3
          std::memcpy(block + 80, &big, 2);
          std::memcpy(block + 82, &big, 2);
          break;
        default:
          std::memcpy(block, &big, 2);
          std::memcpy(block + 2, &big, 2);
          std::memset(block + 4, 0xFF, static_cast<size_t>(bytes - 4));  // scales, mins 63; codes 15 / 31
          break;
      }
    }
    redequantize(w, type, N, K);
    std::vector<float> x(static_cast<size_t>(M * K));
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 5 == 0 ? -1.0f : 1.0f) * static_cast<float>(i % 11) * 7.0e3f;
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(k)] = 1.0f;                  // codes 127
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(5 * K + k)] *= 1e34f;       // overflows to inf
    x[static_cast<size_t>(2 * K + 300)] = std::numeric_limits<float>::quiet_NaN();   // row 2, block 1
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(4 * K + k)] = 1e-40f;       // a subnormal row
    x[static_cast<size_t>(6 * K + 3)] = -std::numeric_limits<float>::infinity();
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
TEST(Q8KActivations, RowsDoNotDependOnTheBatchOrOnTheSplitOfN) {
  std::mt19937 rng(29);
  for (DType type : kTypes) {
    const int64_t M = 23, N = 19, K = 1024;
    const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
    const auto w = weights(type, N, K, rng);
    for (Isa isa : available_isas()) {
      SCOPED_TRACE(trace(type, isa, M, N, K));
      const MatmulOptions options{isa, kInt8};
      const auto batch = run_matmul(x, K, M, w.view, nullptr, options);
      ASSERT_EQ(testing::first_batch_dependence(x, K, M, w.view, options, batch, {2, 3, 4, 5, 16}), "");
      std::vector<float> tiled(batch.size(), -1.0f);
      MatmulPlan plan = plan_matmul(x.data(), K, M, w.view, tiled.data(), N, nullptr, options);
      ASSERT_EQ(plan.xq_bytes, q8k_activation_bytes(M, K));
      prepare_activations(std::span(&plan, 1), test_activations());
      for (int64_t n0 = N; n0 > 0; n0 -= 5) plan.run_rows(std::max<int64_t>(0, n0 - 5), n0);  // last tile first
      ASSERT_TRUE(same_bits(tiled, batch));
    }
  }
}

// Plans over one x with Q8_0-style and Q8_K-style kernels (a Q4_K_M file's Q4_K and Q6_K tensors, or
// Q4_K beside Q8_0) each get their own format; Q4_K and Q6_K share one copy.
TEST(Q8KActivations, PlansShareACopyOnlyInTheSameFormat) {
  std::mt19937 rng(31);
  const int64_t M = 3, N = 4, K = 256;
  const auto x = random_floats(static_cast<size_t>(M * K), rng);
  const auto q4k = weights(DType::kQ4_K, N, K, rng);
  const auto q6k = weights(DType::kQ6_K, N, K, rng);
  const auto q8 = testing::random_weights(DType::kQ8_0, N, K, rng);
  std::vector<float> y(static_cast<size_t>(3 * M * N));
  for (Isa isa : available_isas()) {
    const MatmulOptions options{isa, kInt8};
    MatmulPlan plans[3] = {plan_matmul(x.data(), K, M, q4k.view, y.data(), N, nullptr, options),
                           plan_matmul(x.data(), K, M, q8.view, y.data() + M * N, N, nullptr, options),
                           plan_matmul(x.data(), K, M, q6k.view, y.data() + 2 * M * N, N, nullptr, options)};
    prepare_activations(plans, test_activations());
    EXPECT_EQ(plans[0].args.xq, plans[2].args.xq);
    EXPECT_NE(plans[0].args.xq, plans[1].args.xq);
    for (auto& p : plans) p.run_rows(0, N);
    const auto alone6 = run_matmul(x, K, M, q6k.view, nullptr, options);
    const auto alone8 = run_matmul(x, K, M, q8.view, nullptr, options);
    EXPECT_EQ(0, std::memcmp(alone8.data(), y.data() + M * N, alone8.size() * sizeof(float))) << isa_name(isa);
    EXPECT_EQ(0, std::memcmp(alone6.data(), y.data() + 2 * M * N, alone6.size() * sizeof(float))) << isa_name(isa);
  }
}

TEST(Q8KActivations, DefaultFromAvx2UpAndNamedPerIsa) {
  for (DType type : kTypes) {
    EXPECT_EQ(default_matmul_precision(type, Isa::kScalar), MatmulPrecision::kF32Activations);
    for (Isa isa : available_isas()) {
      if (isa >= Isa::kAvx2) {
        EXPECT_EQ(default_matmul_precision(type, isa), kInt8) << isa_name(isa);
      }
    }
    std::string lower(dtype_name(type));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(kernel_name_for(type, 256, Isa::kScalar, kInt8), "reference_" + lower + "_int8");
    EXPECT_EQ(kernel_name_for(type, 128, Isa::kScalar, kInt8), "");  // not a whole block
    if (cpu_features().avx2) {
      EXPECT_EQ(kernel_name_for(type, 256, Isa::kAvx2, kInt8), "avx2_" + lower + "_int8");
    }
    if (cpu_features().avx512) {
      EXPECT_EQ(kernel_name_for(type, 256, Isa::kAvx512, kInt8), std::string(cpu_features().avx512_vnni ? "avx512_vnni_" : "avx2_") + lower + "_int8");  // VNNI is checked once, in the kernel set
    }
  }
}

}  // namespace
}  // namespace lemma::kernels
