#include "lemma/tensor/dtype.h"

#include <gtest/gtest.h>

#include "lemma/tensor/tensor_view.h"

namespace lemma {
namespace {

TEST(DType, BlockSizesFollowGgml) {
  EXPECT_EQ(dtype_bytes(DType::kQ8_0, 64), 68u);
  EXPECT_EQ(dtype_bytes(DType::kQ4_0, 32), 18u);
  EXPECT_EQ(dtype_bytes(DType::kQ4_K, 512), 288u);
  EXPECT_EQ(dtype_bytes(DType::kQ6_K, 256), 210u);
  EXPECT_FALSE(dtype_bytes(DType::kQ8_0, 33).has_value());
  EXPECT_FALSE(dtype_bytes(DType::kF64, UINT64_MAX / 2).has_value());
}

TEST(DType, NamesRoundTrip) {
  for (auto name : {"F32", "F16", "BF16", "I64", "F8_E4M3"}) {
    auto t = dtype_from_safetensors(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(dtype_to_safetensors(*t), name);
  }
  EXPECT_FALSE(dtype_from_safetensors("F7").has_value());
  for (uint32_t id : {0u, 1u, 2u, 8u, 12u, 13u, 14u, 30u}) {
    auto t = dtype_from_ggml(id);
    ASSERT_TRUE(t.has_value()) << id;
    EXPECT_EQ(dtype_to_ggml(*t), id);
  }
  EXPECT_FALSE(dtype_from_ggml(4).has_value());
  EXPECT_FALSE(dtype_from_ggml(1000).has_value());
}

TEST(TensorView, ShapeAndBytes) {
  TensorView v{nullptr, DType::kBF16, Shape{3, 5}};
  EXPECT_EQ(v.elements(), 15);
  EXPECT_EQ(v.bytes(), 30u);
  EXPECT_EQ(v.shape.to_string(), "[3, 5]");
  EXPECT_EQ(Shape({3, 5}), Shape({3, 5}));
  EXPECT_FALSE(Shape({3, 5}) == Shape({5, 3}));
}

}  // namespace
}  // namespace lemma
