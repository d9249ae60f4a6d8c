// Every crafted hostile file must fail to parse with a FormatError that names the file and the
// problem; every crafted valid file must parse.
#include <gtest/gtest.h>

#include <filesystem>

#include "hostile_cases.h"
#include "lemma/base/error.h"
#include "lemma/io/gguf.h"
#include "lemma/io/safetensors.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

template <typename Parse>
void expect_rejected(const CraftedFile& c, const std::string& file_name, Parse parse) {
  try {
    parse(MappedFile::from_bytes(c.bytes, file_name));
    FAIL() << file_name << " was accepted";
  } catch (const FormatError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(file_name + ": ", 0), 0u) << "error does not start with the file: " << message;
    for (const auto& word : c.expected) EXPECT_NE(message.find(word), std::string::npos) << message << "\nlacks: " << word;
  }
}

std::string case_name(const ::testing::TestParamInfo<CraftedFile>& info) { return info.param.name; }

class HostileGguf : public ::testing::TestWithParam<CraftedFile> {};
TEST_P(HostileGguf, IsRejectedWithAClearError) {
  ASSERT_FALSE(GetParam().expected.empty());
  expect_rejected(GetParam(), "hostile/" + GetParam().name + ".gguf",
                  [](MappedFile f) { GgufFile::parse(std::move(f)); });
}
INSTANTIATE_TEST_SUITE_P(Cases, HostileGguf, ::testing::ValuesIn(hostile_gguf_files()), case_name);

class ValidGguf : public ::testing::TestWithParam<CraftedFile> {};
TEST_P(ValidGguf, Parses) {
  const auto file = GgufFile::parse(MappedFile::from_bytes(GetParam().bytes, GetParam().name));
  EXPECT_GE(file.metadata().size(), 1u);
}
INSTANTIATE_TEST_SUITE_P(Cases, ValidGguf, ::testing::ValuesIn(valid_gguf_files()), case_name);

class HostileSafetensors : public ::testing::TestWithParam<CraftedFile> {};
TEST_P(HostileSafetensors, IsRejectedWithAClearError) {
  ASSERT_FALSE(GetParam().expected.empty());
  expect_rejected(GetParam(), "hostile/" + GetParam().name + ".safetensors",
                  [](MappedFile f) { SafetensorsFile::parse(std::move(f)); });
}
INSTANTIATE_TEST_SUITE_P(Cases, HostileSafetensors, ::testing::ValuesIn(hostile_safetensors_files()), case_name);

class ValidSafetensors : public ::testing::TestWithParam<CraftedFile> {};
TEST_P(ValidSafetensors, Parses) {
  EXPECT_NO_THROW(SafetensorsFile::parse(MappedFile::from_bytes(GetParam().bytes, GetParam().name)));
}
INSTANTIATE_TEST_SUITE_P(Cases, ValidSafetensors, ::testing::ValuesIn(valid_safetensors_files()), case_name);

}  // namespace
}  // namespace lemma::testing

namespace lemma::testing {
namespace {

const CraftedFile& valid_gguf(const std::string& name) {
  static const auto files = valid_gguf_files();
  for (const auto& f : files)
    if (f.name == name) return f;
  throw std::runtime_error("no crafted file " + name);
}

TEST(GgufVersions, Version2IsReadLikeVersion3) {
  const auto f = GgufFile::parse(MappedFile::from_bytes(valid_gguf("valid_v2").bytes, "v2.gguf"));
  EXPECT_EQ(f.version(), 2u);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensor("b.weight")->view.shape, (Shape{2, 4}));
  EXPECT_EQ(f.tensor("b.weight")->offset, 32u);
}

TEST(GgufVersions, VocabOnlyFileMayEndWithoutPadding) {
  const auto& c = valid_gguf("valid_vocab_only");
  EXPECT_NE(c.bytes.size() % 32, 0u);  // really unpadded
  const auto f = GgufFile::parse(MappedFile::from_bytes(c.bytes, "vocab.gguf"));
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
}

}  // namespace
}  // namespace lemma::testing

namespace lemma::testing {
namespace {

// fuzz/corpus/ is generated from these cases; a stale corpus would replay old files in CI.
void expect_corpus_has(const std::string& folder, const std::vector<CraftedFile>& files, const std::string& prefix) {
  for (const auto& f : files) {
    const auto path = std::filesystem::path(LEMMA_FUZZ_CORPUS_DIR) / folder / (prefix + f.name + ".bin");
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing: run io_make_fuzz_corpus fuzz/corpus";
    const auto text = read_file(path);
    const std::vector<uint8_t> bytes(text.begin(), text.end());
    EXPECT_TRUE(bytes == f.bytes)
        << path << " is stale: run io_make_fuzz_corpus fuzz/corpus";
  }
}

TEST(FuzzCorpus, MatchesTheCraftedCases) {
  expect_corpus_has("gguf", valid_gguf_files(), "");
  expect_corpus_has("gguf", hostile_gguf_files(), "hostile_");
  expect_corpus_has("safetensors", valid_safetensors_files(), "");
  expect_corpus_has("safetensors", hostile_safetensors_files(), "hostile_");
}

}  // namespace
}  // namespace lemma::testing
