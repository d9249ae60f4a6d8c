#include "lemma/io/gguf_writer.h"

#include <gtest/gtest.h>

#include <cstring>

#include "lemma/base/error.h"
#include "lemma/io/gguf.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

std::vector<uint8_t> iota_bytes(size_t n, uint8_t start = 1) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i);
  return v;
}

GgufFile reparse(const GgufWriter& w, const std::string& name) {
  return GgufFile::parse(MappedFile::from_bytes(w.to_bytes(), name));
}

TEST(GgufWriter, RoundTripsEveryValueType) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_scalar<uint8_t>("u8", 255);
  w.set_scalar<int8_t>("i8", -128);
  w.set_scalar<uint16_t>("u16", 65535);
  w.set_scalar<int16_t>("i16", -32768);
  w.set_scalar<uint32_t>("u32", 4000000000u);
  w.set_scalar<int32_t>("i32", -2000000000);
  w.set_scalar<uint64_t>("u64", ~0ull);
  w.set_scalar<int64_t>("i64", INT64_MIN);
  w.set_scalar<float>("f32", 0.1f);
  w.set_scalar<double>("f64", 0.1);
  w.set_scalar<bool>("bool", false);
  w.set_strings("strings", {"", "é", std::string("\0x", 2)});
  w.set_array<int32_t>("i32s", std::vector<int32_t>{-1, 0, 1});
  w.set_array<uint64_t>("u64s", std::vector<uint64_t>{});
  w.set_array<double>("f64s", std::vector<double>{1.0 / 3});
  w.set_array("bools", std::vector<bool>{true, false});

  const auto f = reparse(w, "roundtrip");
  ASSERT_EQ(f.metadata().size(), 17u);
  EXPECT_EQ(f.metadata()[0].first, "general.architecture");  // file order kept
  EXPECT_EQ(f.find("u8")->as_int(), 255);
  EXPECT_EQ(f.find("i8")->as_int(), -128);
  EXPECT_EQ(f.find("u16")->as_int(), 65535);
  EXPECT_EQ(f.find("i16")->as_int(), -32768);
  EXPECT_EQ(f.find("u32")->as_uint(), 4000000000u);
  EXPECT_EQ(f.find("i32")->as_int(), -2000000000);
  EXPECT_EQ(f.find("u64")->as_uint(), ~0ull);
  EXPECT_EQ(f.find("i64")->as_int(), INT64_MIN);
  EXPECT_EQ(f.find("f32")->type(), GgufValueType::kF32);
  EXPECT_EQ(static_cast<float>(f.find("f32")->as_float()), 0.1f);
  EXPECT_EQ(f.find("f64")->as_float(), 0.1);
  EXPECT_EQ(f.get_bool("bool"), false);
  EXPECT_EQ(f.find("strings")->as_strings(), (std::vector<std::string>{"", "é", std::string("\0x", 2)}));
  EXPECT_EQ(f.find("i32s")->element_type(), GgufValueType::kI32);
  EXPECT_EQ(f.find("i32s")->as_ints(), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(f.find("u64s")->size(), 0u);
  EXPECT_EQ(f.find("f64s")->element_type(), GgufValueType::kF64);
  EXPECT_EQ(f.find("bools")->to_display(), "[bool x 2] [true, false]");
  EXPECT_TRUE(f.tensors().empty());
}

TEST(GgufWriter, RoundTripsTensorsWithCustomAlignment) {
  GgufWriter w;
  w.set_alignment(64);
  const auto a = iota_bytes(3 * 4);
  const auto q = iota_bytes(34 * 3, 7);
  const auto h = iota_bytes(2 * 2 * 3 * 5);
  w.add_tensor("a", DType::kF32, Shape{3}, a);
  w.add_tensor("q", DType::kQ8_0, Shape{3, 32}, q);
  w.add_tensor("h", DType::kF16, Shape{2, 3, 5}, h);
  const auto f = reparse(w, "aligned");
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  ASSERT_EQ(f.tensors().size(), 3u);
  const std::vector<const std::vector<uint8_t>*> data{&a, &q, &h};
  for (size_t i = 0; i < 3; ++i) {
    const auto& t = f.tensors()[i];
    EXPECT_EQ(t.offset % 64, 0u) << t.name;
    ASSERT_EQ(t.view.bytes(), data[i]->size()) << t.name;
    EXPECT_EQ(std::memcmp(t.view.data, data[i]->data(), data[i]->size()), 0) << t.name;
  }
  EXPECT_EQ(f.tensor("q")->ggml_type, 8u);
  EXPECT_EQ(f.tensor("q")->view.shape, (Shape{3, 32}));
  EXPECT_EQ(f.tensor("h")->view.shape, (Shape{2, 3, 5}));
  EXPECT_EQ(f.file().size() % 64, 0u);  // the last tensor is padded too
}

TEST(GgufWriter, WritesFilesThatOpenFromDisk) {
  GgufWriter w;
  w.set_string("general.name", "disk");
  const auto a = iota_bytes(8);
  w.add_tensor("a", DType::kI8, Shape{8}, a);
  const auto path = (testing::build_scratch("io") / "writer_disk.gguf").string();
  w.write(path);
  const auto f = GgufFile::open(path, LoadMode::kPrefaultMmap);
  EXPECT_EQ(f.get_string("general.name"), "disk");
  EXPECT_EQ(f.tensor("a")->view.as<int8_t>()[7], 8);
}

TEST(GgufWriter, RejectsWhatTheReaderWouldReject) {
  GgufWriter w;
  w.set_string("k", "v");
  EXPECT_THROW(w.set_string("k", "again"), InvalidArgument);
  EXPECT_THROW(w.set_scalar<uint32_t>("general.alignment", 48), InvalidArgument);
  EXPECT_THROW(w.set_scalar<uint64_t>("general.alignment", 64), InvalidArgument);
  const auto bytes = iota_bytes(34);
  EXPECT_THROW(w.add_tensor("q", DType::kQ8_0, Shape{2, 16}, iota_bytes(34)), InvalidArgument);  // row 16
  EXPECT_THROW(w.add_tensor("q", DType::kQ8_0, Shape{32}, iota_bytes(33)), InvalidArgument);     // size
  EXPECT_THROW(w.add_tensor("b", DType::kBool, Shape{1}, iota_bytes(1)), InvalidArgument);       // no ggml id
  EXPECT_THROW(w.add_tensor("r", DType::kU8, Shape{1, 1, 1, 1, 1}, iota_bytes(1)), InvalidArgument);  // rank
  EXPECT_THROW(w.add_tensor("z", DType::kF32, Shape{0}, {}), InvalidArgument);
  w.add_tensor("q", DType::kQ8_0, Shape{32}, bytes);
  EXPECT_THROW(w.add_tensor("q", DType::kQ8_0, Shape{32}, bytes), InvalidArgument);
}

// Copying a llama.cpp-written file through the writer reproduces it byte for byte: same header
// encoding, same offsets, same padding.
TEST(GgufWriter, ReproducesLlamaCppFilesExactly) {
  const auto path = testing::shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(path);
  const auto original = GgufFile::open(path.string());
  GgufWriter w;
  for (const auto& [key, value] : original.metadata()) w.set(value);
  for (const auto& t : original.tensors()) w.add_tensor(t.name, t.view);
  const auto bytes = w.to_bytes();
  ASSERT_EQ(bytes.size(), original.file().size());
  EXPECT_EQ(std::memcmp(bytes.data(), original.file().data(), bytes.size()), 0);
}

}  // namespace
}  // namespace lemma
