#include "lemma/kernels/isa.h"

#include <gtest/gtest.h>

namespace lemma::kernels {
namespace {

TEST(Isa, NamesRoundTrip) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  }
  EXPECT_FALSE(parse_isa("avx-512").has_value());
  EXPECT_FALSE(parse_isa("").has_value());
}

TEST(Isa, AvailableListIsContiguousFromScalar) {
  const auto isas = available_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kScalar);
  EXPECT_EQ(isas.back(), detected_isa());
  for (size_t i = 0; i < isas.size(); ++i) EXPECT_EQ(static_cast<size_t>(isas[i]), i);
}

TEST(Isa, FeaturesAreConsistent) {
  const CpuFeatures& f = cpu_features();
  if (f.avx512) {
    EXPECT_TRUE(f.avx2);
  }
  if (f.avx512_bf16 || f.avx512_vnni || f.amx) {
    EXPECT_TRUE(f.avx512);
  }
  EXPECT_LE(detected_isa(), detected_isa());
}

}  // namespace
}  // namespace lemma::kernels
