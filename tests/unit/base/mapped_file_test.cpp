#include "lemma/base/mapped_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "lemma/base/error.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

std::string write_scratch(const std::string& name, const std::string& content) {
  auto path = testing::build_scratch("mapped_file") / name;
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}

TEST(MappedFile, EveryModeSeesTheSameBytes) {
  const std::string content = "hello, lemma\n";
  const auto path = write_scratch("hello.txt", content);
  for (auto mode : {LoadMode::kLazyMmap, LoadMode::kPrefaultMmap, LoadMode::kCopy}) {
    auto file = MappedFile::open(path, mode);
    ASSERT_EQ(file.size(), content.size()) << to_string(mode);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(file.data()), file.size()), content);
    EXPECT_GE(file.load_seconds(), 0.0);
    EXPECT_EQ(file.mode(), mode);
  }
}

TEST(MappedFile, CopyIsAlignedAndSurvivesMove) {
  const auto path = write_scratch("moved.txt", std::string(1000, 'x'));
  auto file = MappedFile::open(path, LoadMode::kCopy);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(file.data()) % 64, 0u);
  MappedFile moved = std::move(file);
  EXPECT_EQ(moved.size(), 1000u);
  EXPECT_EQ(moved.data()[999], 'x');
  EXPECT_EQ(file.size(), 0u);
}

TEST(MappedFile, EmptyFileIsEmpty) {
  const auto path = write_scratch("empty.txt", "");
  EXPECT_EQ(MappedFile::open(path).size(), 0u);
}

TEST(MappedFile, MissingFileNamesThePath) {
  try {
    MappedFile::open("/nonexistent/lemma-file.bin");
    FAIL() << "expected an error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/lemma-file.bin"), std::string::npos);
  }
}

TEST(MappedFile, ParsesLoadModes) {
  EXPECT_EQ(parse_load_mode("lazy"), LoadMode::kLazyMmap);
  EXPECT_EQ(parse_load_mode("prefault"), LoadMode::kPrefaultMmap);
  EXPECT_EQ(parse_load_mode("copy"), LoadMode::kCopy);
  EXPECT_THROW(parse_load_mode("eager"), InvalidArgument);
}

}  // namespace
}  // namespace lemma
