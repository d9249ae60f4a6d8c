#include "lemma/io/gguf_value.h"

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/io/gguf_writer.h"

namespace lemma {
namespace {

GgufValue u32(uint32_t v) { return make_gguf_value<uint32_t>("k.u32", std::span<const uint32_t>(&v, 1), false); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no error";
}

TEST(GgufValue, ScalarAccessorsConvertIntegers) {
  const auto v = u32(4000000000u);
  EXPECT_EQ(v.type(), GgufValueType::kU32);
  EXPECT_FALSE(v.is_array());
  EXPECT_EQ(v.size(), 1u);
  EXPECT_EQ(v.as_int(), 4000000000ll);
  EXPECT_EQ(v.as_uint(), 4000000000ull);
  EXPECT_DOUBLE_EQ(v.as_float(), 4e9);
  const int8_t neg = -3;
  const auto i8 = make_gguf_value<int8_t>("k.i8", std::span<const int8_t>(&neg, 1), false);
  EXPECT_EQ(i8.as_int(), -3);
  EXPECT_THROW(i8.as_uint(), FormatError);
}

TEST(GgufValue, MismatchNamesKeyAndActualType) {
  const auto v = u32(7);
  EXPECT_EQ(error_of([&] { v.as_string(); }), "GGUF key 'k.u32': expected string, found u32");
  EXPECT_EQ(error_of([&] { v.as_bool(); }), "GGUF key 'k.u32': expected bool, found u32");
  EXPECT_EQ(error_of([&] { v.as_ints(); }), "GGUF key 'k.u32': expected array of integers, found u32");
  const auto s = make_gguf_strings("k.tokens", {"a", "b"});
  EXPECT_EQ(error_of([&] { s.as_string(); }), "GGUF key 'k.tokens': expected string, found array of string");
  EXPECT_EQ(error_of([&] { s.as_int(); }), "GGUF key 'k.tokens': expected an integer, found array of string");
}

TEST(GgufValue, U64BeyondInt64IsRejectedByAsInt) {
  const uint64_t big = ~0ull;
  const auto v = make_gguf_value<uint64_t>("k.big", std::span<const uint64_t>(&big, 1), false);
  EXPECT_EQ(v.as_uint(), big);
  EXPECT_NE(error_of([&] { v.as_int(); }).find("does not fit"), std::string::npos);
}

TEST(GgufValue, ArraysConvertElementTypes) {
  const std::vector<int16_t> ints{-1, 2, 3};
  const auto v = make_gguf_value<int16_t>("k.ints", std::span<const int16_t>(ints), true);
  EXPECT_EQ(v.type(), GgufValueType::kArray);
  EXPECT_EQ(v.element_type(), GgufValueType::kI16);
  EXPECT_EQ(v.as_ints(), (std::vector<int64_t>{-1, 2, 3}));
  EXPECT_EQ(v.as_floats(), (std::vector<float>{-1.f, 2.f, 3.f}));
  EXPECT_THROW(v.as_strings(), FormatError);
  EXPECT_THROW(v.as_int(), FormatError);
  EXPECT_THROW(u32(1).element_type(), FormatError);
}

TEST(GgufValue, DisplayIsShort) {
  EXPECT_EQ(u32(42).to_display(), "42");
  EXPECT_EQ(make_gguf_string("k", "a\"b\n").to_display(), R"("a\"b\n")");
  EXPECT_EQ(make_gguf_strings("k", {"x", "y", "z"}).to_display(2), R"([string x 3] ["x", "y", ...])");
  const std::vector<float> f{0.5f, -1.f};
  EXPECT_EQ(make_gguf_value<float>("k", std::span<const float>(f), true).to_display(), "[f32 x 2] [0.5, -1]");
  const bool t = true;
  EXPECT_EQ(make_gguf_value<bool>("k", std::span<const bool>(&t, 1), false).to_display(), "true");
  EXPECT_EQ(make_gguf_string("k", std::string(100, 'a')).to_display().size(), 60u + 5u);
}

}  // namespace
}  // namespace lemma
