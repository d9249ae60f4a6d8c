#include "lemma/kernels/registry.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace lemma::kernels {
namespace {

TEST(Registry, PicksHighestIsaAndFallsBack) {
  EXPECT_EQ(kernel_name_for(DType::kF32, 64, Isa::kScalar), "reference_f32");
  EXPECT_EQ(kernel_name_for(DType::kF32, 64, Isa::kAvx2), "avx2_f32");
  EXPECT_EQ(kernel_name_for(DType::kBF16, 64, Isa::kAvx512), "avx512_bf16");
  EXPECT_EQ(kernel_name_for(DType::kF16, 64, Isa::kAmx), "avx512_f16");  // no AMX kernel yet
  EXPECT_EQ(kernel_name_for(DType::kQ4_K, 512, Isa::kScalar), "reference_q4_k");
  EXPECT_EQ(kernel_name_for(DType::kQ4_K, 512, Isa::kAvx512), "avx512_q4_k");
  EXPECT_EQ(kernel_name_for(DType::kQ8_0, 96, Isa::kAvx2), "avx2_q8_0");
  EXPECT_EQ(kernel_name_for(DType::kQ6_K, 256, Isa::kAmx), "avx512_q6_k");
}

TEST(Registry, ShapeAndDtypeLimits) {
  EXPECT_EQ(kernel_name_for(DType::kQ4_K, 100, Isa::kScalar), "");  // K not whole blocks
  EXPECT_EQ(kernel_name_for(DType::kQ8_0, 33, Isa::kScalar), "");
  EXPECT_EQ(kernel_name_for(DType::kI32, 8, Isa::kAvx512), "");
  EXPECT_EQ(find_matmul_kernel(DType::kQ8_K, 256, Isa::kScalar), nullptr);
  EXPECT_EQ(kernel_name_for(DType::kQ3_K, 256, Isa::kAvx2), "avx2_q3_k");
}

TEST(Registry, Bf16ActivationsNeedTheFeatureElseFallBack) {
  const auto bf16 = MatmulPrecision::kBf16Activations;
  EXPECT_EQ(kernel_name_for(DType::kF32, 64, Isa::kAvx512, bf16), "avx512_f32");  // no such kernel
  EXPECT_EQ(kernel_name_for(DType::kBF16, 64, Isa::kAvx2, bf16), "avx2_bf16");
  EXPECT_EQ(kernel_name_for(DType::kBF16, 64, Isa::kAvx512, bf16),
            cpu_features().avx512_bf16 ? "avx512_bf16_dpbf16" : "avx512_bf16");
}

TEST(Registry, TableIsWellFormed) {
  std::set<std::string> names;
  for (const MatmulKernel& k : matmul_kernels()) {
    EXPECT_TRUE(names.insert(std::string(k.name)).second) << "duplicate " << k.name;
    EXPECT_NE(k.fn, nullptr) << k.name;
  }
  // Every dtype with an optimised kernel also has a scalar reference to fall back to (of the same
  // activation precision, or f32; interleaved dtypes have int8 ones only).
  for (const MatmulKernel& k : matmul_kernels()) {
    EXPECT_NE(kernel_name_for(k.weight, 256, Isa::kScalar, k.precision), "") << k.name;
  }
}

}  // namespace
}  // namespace lemma::kernels
