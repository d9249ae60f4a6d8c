// The AMX-INT8 kernels for interleaved Q8_0x16 / Q4_0x16 / Q5_0x16 / Q4_1x16 / Q5_1x16 / IQ4_NLx16 / IQ4_XSx16 weights (x86/amx/): on the tile
// emulator (every machine) and on the AMX hardware (skipped without AMX), each kernel gives the
// reference kernel's bits on odd shapes (partial 16-row tiles of x and groups of W, K across the
// kernel's 512-value chunks, strided x, bias) and extreme values; no row depends on M or on the
// other rows; row ranges that start on group edges give the whole call's bits.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_scratch.h"
#include "lemma/kernels/matmul.h"
#include "lemma/kernels/reference/lemma_int.h"
#include "lemma/kernels/x86/amx/amx_int8.h"
#include "hardware_paths.h"
#include "matmul_test_util.h"

namespace lemma::kernels {
namespace {

using testing::random_floats;
using testing::same_bits;

constexpr DType kTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0, DType::kQ4_1, DType::kQ5_1, DType::kIQ4_NL, DType::kIQ4_XS};
// K for a test that wants about `k` values per row: IQ4_XS needs whole 256-value blocks.
int64_t row_length(DType plain, int64_t k) { return dtype_info(plain).block_elements == 256 ? (k + 255) / 256 * 256 : k; }

// One dtype's AMX kernel on one backend, and the oracle it must match.
struct Kernels {
  MatmulFn amx;
  MatmulFn oracle;
};
Kernels emulated(DType plain) {
  switch (plain) {
    case DType::kQ8_0: return {x86::matmul_q8_0x16_int8_amx_emulated, matmul_q8_0x16_int8_reference};
    case DType::kQ4_0: return {x86::matmul_q4_0x16_int8_amx_emulated, matmul_q4_0x16_int8_reference};
    case DType::kQ4_1: return {x86::matmul_q4_1x16_int8_amx_emulated, matmul_q4_1x16_int8_reference};
    case DType::kQ5_1: return {x86::matmul_q5_1x16_int8_amx_emulated, matmul_q5_1x16_int8_reference};
    case DType::kIQ4_NL: return {x86::matmul_iq4_nlx16_int8_amx_emulated, matmul_iq4_nlx16_int8_reference};
    case DType::kIQ4_XS: return {x86::matmul_iq4_xsx16_int8_amx_emulated, matmul_iq4_xsx16_int8_reference};
    default: return {x86::matmul_q5_0x16_int8_amx_emulated, matmul_q5_0x16_int8_reference};
  }
}
Kernels hardware(DType plain) {
  switch (plain) {
    case DType::kQ8_0: return {x86::matmul_q8_0x16_int8_amx, matmul_q8_0x16_int8_reference};
    case DType::kQ4_0: return {x86::matmul_q4_0x16_int8_amx, matmul_q4_0x16_int8_reference};
    case DType::kQ4_1: return {x86::matmul_q4_1x16_int8_amx, matmul_q4_1x16_int8_reference};
    case DType::kQ5_1: return {x86::matmul_q5_1x16_int8_amx, matmul_q5_1x16_int8_reference};
    case DType::kIQ4_NL: return {x86::matmul_iq4_nlx16_int8_amx, matmul_iq4_nlx16_int8_reference};
    case DType::kIQ4_XS: return {x86::matmul_iq4_xsx16_int8_amx, matmul_iq4_xsx16_int8_reference};
    default: return {x86::matmul_q5_0x16_int8_amx, matmul_q5_0x16_int8_reference};
  }
}
using Backend = Kernels (*)(DType);

// Interleaved W [N, K] from plain blocks, and x quantised once (signed codes, block sums).
struct Problem {
  DType plain;
  int64_t N, K;
  std::vector<uint8_t> w;
  int64_t M = 0;
  std::unique_ptr<uint8_t[]> xq_storage;
  const void* xq = nullptr;

  Problem(DType type, const std::vector<uint8_t>& plain_bytes, int64_t n, int64_t k) : plain(type), N(n), K(k) {
    w.resize(interleaved_bytes(type, N, K));
    interleave_rows(type, plain_bytes.data(), N, K, w.data());
  }
  void quantize(const std::vector<float>& x, int64_t x_stride, int64_t rows) {
    M = rows;
    xq_storage = std::make_unique<uint8_t[]>(int8_signed_activation_bytes(M, K) + 64);
    auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(xq_storage.get()) + 63) / 64 * 64);
    quantize_signed_activations_reference(x.data(), x_stride, M, K, aligned);
    xq = aligned;
  }
  // y [M, N] from `fn` over W's rows [n0, n1) only (n0 on a group edge), as MatmulPlan::run_rows passes them.
  void run(MatmulFn fn, const float* bias, std::vector<float>& y, int64_t n0, int64_t n1,
           KernelScratch* scratch = nullptr) const {
    MatmulArgs a;
    a.w_row_bytes = static_cast<int64_t>(*dtype_bytes(plain, static_cast<uint64_t>(K)));
    a.w = w.data() + n0 * a.w_row_bytes;
    a.bias = bias != nullptr ? bias + n0 : nullptr;
    a.y = y.data() + n0;
    a.y_stride = N;
    a.M = M;
    a.N = n1 - n0;
    a.K = K;
    a.xq = xq;
    a.scratch = scratch;
    fn(a);
  }
  std::vector<float> run(MatmulFn fn, const float* bias) const {
    std::vector<float> y(static_cast<size_t>(M * N), -1.0f);
    run(fn, bias, y, 0, N);
    return y;
  }
};

Problem random_problem(DType type, int64_t N, int64_t K, std::mt19937& rng) {
  return Problem(type, testing::random_weights(type, N, K, rng).bytes, N, K);  // Q8_0 codes span -128..127
}

std::string trace(DType type, int64_t M, int64_t N, int64_t K) {
  return std::string(dtype_name(type)) + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

void expect_reference_bits(Backend backend) {
  std::mt19937 rng(41);
  // Partial and whole 16-row tiles of x (1, 16, 17, 33, 40), partial groups of W and odd group counts,
  // K of 1 block up to 152 (several 16-block chunks, the last one partial).
  const struct {
    int64_t M, N, K;
  } shapes[] = {{1, 1, 32},   {1, 16, 64},   {2, 17, 96},    {3, 31, 160},   {16, 48, 256}, {17, 33, 544},
                {33, 100, 896}, {5, 40, 1056}, {40, 65, 4864}, {1, 100, 4864}, {15, 7, 512}, {32, 80, 128},
                {19, 260, 640}};
  for (DType type : kTypes) {
    const Kernels k = backend(type);
    for (const auto& s : shapes) {
      if (s.K % static_cast<int64_t>(dtype_info(type).block_elements) != 0) continue;  // IQ4_XS: whole 256-value blocks
      Problem p = random_problem(type, s.N, s.K, rng);
      const int64_t stride = s.K + 3;
      const auto x = random_floats(static_cast<size_t>(s.M * stride), rng, 3.0f);
      const auto bias = random_floats(static_cast<size_t>(s.N), rng);
      p.quantize(x, stride, s.M);
      for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
        ASSERT_TRUE(same_bits(p.run(k.amx, b), p.run(k.oracle, b))) << trace(type, s.M, s.N, s.K) << (b ? " bias" : "");
      }
    }
  }
}

// Extreme scales and codes, a NaN in x (only its row is NaN), an all-zero row of x, huge values.
void expect_reference_bits_at_extremes(Backend backend) {
  std::mt19937 rng(43);
  for (DType type : kTypes) {
    const int64_t M = 19, N = 35, K = row_length(type, 576);
    auto w = testing::random_weights(type, N, K, rng);
    testing::make_extreme_blocks(type, w.bytes, N * K / static_cast<int64_t>(dtype_info(type).block_elements));
    Problem p(type, w.bytes, N, K);
    std::vector<float> x(static_cast<size_t>(M * K));
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 5 == 0 ? -1.0f : 1.0f) * static_cast<float>(i % 11) * 7.0e3f;
    x[static_cast<size_t>(2 * K + 40)] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(17 * K + k)] = 0.0f;
    p.quantize(x, K, M);
    const Kernels k = backend(type);
    const auto want = p.run(k.oracle, nullptr);
    EXPECT_TRUE(std::isnan(want[static_cast<size_t>(2 * N)]));
    EXPECT_EQ(want[static_cast<size_t>(17 * N)], 0.0f);
    EXPECT_TRUE(same_bits(p.run(k.amx, nullptr), want)) << trace(type, M, N, K);
  }
}

// A row alone, a prefix of rows, or the whole batch: the same bits. Row ranges that start on group
// edges (in any order, pairing groups differently from the whole call) too.
void expect_batch_and_split_invariance(Backend backend) {
  std::mt19937 rng(47);
  for (DType type : kTypes) {
    const int64_t M = 37, N = 83, K = row_length(type, 640);
    const auto x = random_floats(static_cast<size_t>(M * K), rng, 2.0f);
    Problem p = random_problem(type, N, K, rng);
    const auto bias = random_floats(static_cast<size_t>(N), rng);
    const MatmulFn fn = backend(type).amx;
    const auto run = [&](const std::vector<float>& rows, int64_t count) {
      p.quantize(rows, K, count);
      return p.run(fn, nullptr);
    };
    const auto batch = run(x, M);
    EXPECT_EQ(testing::first_batch_dependence_of(run, x, K, M, N, batch, {2, 15, 16, 17, 32, 33}), "") << trace(type, M, N, K);
    p.quantize(x, K, M);
    const auto whole = p.run(fn, bias.data());
    std::vector<float> split(whole.size(), -1.0f);
    for (const auto& [n0, n1] : {std::pair<int64_t, int64_t>{80, 83}, {16, 48}, {48, 80}, {0, 16}}) p.run(fn, bias.data(), split, n0, n1);
    EXPECT_TRUE(same_bits(split, whole)) << trace(type, M, N, K);
  }
}

TEST(AmxMatmul, EmulatedKernelsGiveTheReferenceBits) { expect_reference_bits(emulated); }
TEST(AmxMatmul, EmulatedKernelsGiveTheReferenceBitsAtExtremes) { expect_reference_bits_at_extremes(emulated); }
TEST(AmxMatmul, EmulatedRowsDoNotDependOnTheBatchOrOnTheSplitOfN) { expect_batch_and_split_invariance(emulated); }

// The staged panel lives in the scratch the caller lends (MatmulArgs::scratch): the kernel grows it
// and leaves the bits alone whatever an earlier user left there (here: 0xFF bytes, NaN scales).
void expect_lent_scratch_is_used_and_its_contents_ignored(Backend backend) {
  std::mt19937 rng(59);
  for (DType type : kTypes) {
    const int64_t M = 40, N = 65, K = row_length(type, 1056);
    Problem p = random_problem(type, N, K, rng);
    p.quantize(random_floats(static_cast<size_t>(M * K), rng, 2.0f), K, M);
    const MatmulFn fn = backend(type).amx;
    const auto own = p.run(fn, nullptr);
    KernelScratch scratch;
    std::vector<float> lent(own.size(), -1.0f);
    p.run(fn, nullptr, lent, 0, N, &scratch);
    EXPECT_GT(scratch.capacity(), 0u) << trace(type, M, N, K);
    EXPECT_TRUE(same_bits(lent, own)) << trace(type, M, N, K);
    std::memset(scratch.reserve(scratch.capacity()), 0xFF, scratch.capacity());
    p.run(fn, nullptr, lent, 0, N, &scratch);
    EXPECT_TRUE(same_bits(lent, own)) << trace(type, M, N, K) << " over a scratch of 0xFF bytes";
  }
}

TEST(AmxMatmul, EmulatedKernelsStageInTheLentScratchWhateverItHolds) {
  expect_lent_scratch_is_used_and_its_contents_ignored(emulated);
}

TEST(AmxMatmul, HardwareKernelsGiveTheReferenceBits) {
  if (!cpu_features().amx) GTEST_SKIP() << testing::without("AMX", "the same kernels ran on the tile emulator instead (AmxMatmul.Emulated*)");
  expect_reference_bits(hardware);
  expect_reference_bits_at_extremes(hardware);
  expect_batch_and_split_invariance(hardware);
  expect_lent_scratch_is_used_and_its_contents_ignored(hardware);
}

// Through matmul(): Isa::kAmx lists the AMX-INT8 kernels for these formats (run from 32 rows of x
// for Q8_0x16 and from 128 for the nibble forms, the VNNI kernels below that; registry.cpp), and
// gives the reference's bits on either side of the switch.
TEST(AmxMatmul, RegistryChoosesTheAmxKernelsUnderAmxOnly) {
  for (MatrixFormat type : {kernels::interleaved(DType::kQ8_0), kernels::interleaved(DType::kQ4_0), kernels::interleaved(DType::kQ5_0), kernels::interleaved(DType::kQ4_1), kernels::interleaved(DType::kQ5_1), kernels::interleaved(DType::kIQ4_NL), kernels::interleaved(DType::kIQ4_XS)}) {
    const std::string name = format_name(type);
    EXPECT_EQ(kernel_name_for(type, 256, Isa::kAmx, MatmulPrecision::kInt8Activations), "amx_" + name + "_int8");
    EXPECT_EQ(kernel_name_for(type, 256, Isa::kAvx512, MatmulPrecision::kInt8Activations), std::string(cpu_features().avx512_vnni ? "avx512_vnni_" : "avx2_") + name + "_int8");  // VNNI is checked once, in the kernel set
  }
  if (detected_isa() < Isa::kAmx) GTEST_SKIP() << testing::without("AMX", "Isa::kAmx cannot run; its kernels ran on the tile emulator instead (AmxMatmul.Emulated*)");
  // Through the registry under Isa::kAmx: below and above the row count where the AMX kernel takes
  // over from the VNNI one, the oracle's bits.
  std::mt19937 rng(53);
  for (DType type : kTypes) {
    const int64_t N = 40, K = 768;
    auto w = testing::random_weights(type, N, K, rng);
    std::vector<uint8_t> bytes(interleaved_bytes(type, N, K));
    interleave_rows(type, w.bytes.data(), N, K, bytes.data());
    const TensorView view{bytes.data(), type, Shape{N, K}, RowLayout::kInterleaved16};
    for (const int64_t M : {21, 31, 32, 33, 127, 128, 130}) {
      const auto x = random_floats(static_cast<size_t>(M * K), rng);
      const auto want = testing::run_matmul(x, K, M, view, nullptr, {Isa::kScalar, MatmulPrecision::kInt8Activations});
      EXPECT_TRUE(same_bits(testing::run_matmul(x, K, M, view, nullptr, {Isa::kAmx, MatmulPrecision::kInt8Activations}), want))
          << dtype_name(type) << " M=" << M;
    }
  }
}

}  // namespace
}  // namespace lemma::kernels
