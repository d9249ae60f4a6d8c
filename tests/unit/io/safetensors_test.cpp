#include "lemma/io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "lemma/base/error.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

TEST(Safetensors, RoundTripsTensorsAndMetadata) {
  const std::vector<float> a{1, 2, 3, 4, 5, 6};
  const std::vector<uint16_t> b{0x3f80, 0x4000, 0x4040};  // bf16 1, 2, 3
  const std::vector<int64_t> c{-1};
  const std::vector<SafetensorsTensor> tensors{
      {"layer.a", {a.data(), DType::kF32, Shape{2, 3}}},
      {"layer.b", {b.data(), DType::kBF16, Shape{3}}},
      {"scalar", {c.data(), DType::kI64, Shape{}}},
  };
  const auto path = (testing::build_scratch("io") / "roundtrip.safetensors").string();
  write_safetensors(path, tensors, {{"format", "pt"}});
  for (auto mode : {LoadMode::kLazyMmap, LoadMode::kPrefaultMmap, LoadMode::kCopy}) {
    const auto f = SafetensorsFile::open(path, mode);
    EXPECT_EQ(f.metadata().at("format"), "pt");
    EXPECT_EQ(f.data_offset() % 8, 0u);  // header padded like the reference writer
    ASSERT_EQ(f.tensors().size(), 3u);
    // Data ordered by element size (i64, f32, bf16), so every view is naturally aligned.
    EXPECT_EQ(f.tensors()[0].name, "scalar");
    EXPECT_EQ(f.tensors()[2].name, "layer.b");
    for (const auto& t : f.tensors())
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.view.data) % dtype_info(t.view.dtype).block_bytes, 0u) << t.name;
    const auto* ta = f.tensor("layer.a");
    ASSERT_NE(ta, nullptr);
    EXPECT_EQ(ta->view.shape, (Shape{2, 3}));
    EXPECT_EQ(ta->view.dtype, DType::kF32);
    EXPECT_EQ(std::memcmp(ta->view.data, a.data(), 24), 0);
    EXPECT_EQ(f.tensor("layer.b")->view.as<uint16_t>()[2], 0x4040);
    EXPECT_EQ(f.tensor("scalar")->view.shape.rank, 0);
    EXPECT_EQ(f.tensor("scalar")->view.as<int64_t>()[0], -1);
    EXPECT_EQ(f.tensor("missing"), nullptr);
    EXPECT_GE(f.load_seconds(), 0.0);
  }
}

TEST(Safetensors, WriterRejectsGgufBlockTypesAndDuplicates) {
  const std::vector<uint8_t> q(34);
  const std::vector<SafetensorsTensor> quant{{"q", {q.data(), DType::kQ8_0, Shape{32}}}};
  EXPECT_THROW(encode_safetensors(quant), InvalidArgument);
  const std::vector<uint8_t> u(2);
  const std::vector<SafetensorsTensor> dup{{"x", {u.data(), DType::kU8, Shape{1}}},
                                           {"x", {u.data(), DType::kU8, Shape{1}}}};
  EXPECT_THROW(encode_safetensors(dup), InvalidArgument);
}

TEST(Safetensors, MissingFileIsAnIoErrorNamingThePath) {
  try {
    SafetensorsFile::open("/nonexistent/x.safetensors");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.safetensors"), std::string::npos);
  }
}

}  // namespace
}  // namespace lemma
