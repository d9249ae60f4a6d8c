// The GGUF reader against real files written by llama.cpp (shared/data).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/io/gguf.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

namespace fs = std::filesystem;

TEST(GgufRealFiles, VocabOnlyTokenizers) {
  const auto dir = testing::shared_data("tokenizers");
  LEMMA_REQUIRE_SHARED(dir);
  int parsed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    const auto file = GgufFile::open(entry.path().string());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(file.version(), 3u);
    EXPECT_TRUE(file.tensors().empty());
    const auto* tokens = file.find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_GT(tokens->as_strings().size(), 1000u);
    ASSERT_TRUE(file.get_string("tokenizer.ggml.model"));
    ++parsed;
  }
  EXPECT_EQ(parsed, 6);
}

TEST(GgufRealFiles, Stories260K) {
  const auto path = testing::shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(path);
  for (auto mode : {LoadMode::kLazyMmap, LoadMode::kCopy}) {
    const auto file = GgufFile::open(path.string(), mode);
    EXPECT_EQ(file.version(), 3u);
    EXPECT_EQ(file.alignment(), 32u);
    EXPECT_EQ(file.metadata().size(), 19u);
    EXPECT_EQ(file.get_string("general.architecture"), "llama");
    EXPECT_EQ(file.get_int("llama.embedding_length"), 64);
    EXPECT_EQ(file.get_int("llama.block_count"), 5);
    EXPECT_EQ(file.get_int("llama.attention.head_count_kv"), 4);
    EXPECT_NEAR(*file.get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-9);
    EXPECT_FALSE(file.get_int("no.such.key"));
    EXPECT_THROW(file.get_int("general.architecture"), FormatError);
    EXPECT_EQ(file.tensors().size(), 48u);
    const auto* embd = file.tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->view.dtype, DType::kF32);
    EXPECT_EQ(embd->view.shape, (Shape{512, 64}));  // ne = [64, 512]
    EXPECT_EQ(embd->offset % file.alignment(), 0u);
    EXPECT_EQ(embd->view.bytes_ptr(), file.file().data() + file.data_offset() + embd->offset);
    EXPECT_EQ(file.tensor("blk.9.attn_q.weight"), nullptr);
    EXPECT_GE(file.load_seconds(), 0.0);
    // The last tensor's data ends inside the file.
    uint64_t end = 0;
    for (const auto& t : file.tensors()) end = std::max(end, file.data_offset() + t.offset + t.view.bytes());
    EXPECT_LE(end, file.file().size());
  }
}

// Every tensor's name, type and shape agree with what llama.cpp reported for the quantized goldens.
TEST(GgufRealFiles, QuantizedGoldensMatchTheirManifests) {
  const auto dir = testing::shared_data("golden/quant");
  LEMMA_REQUIRE_SHARED(dir);
  int files = 0;
  std::set<DType> seen;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    const auto file = GgufFile::open(entry.path().string());
    auto json_path = entry.path();
    json_path.replace_extension(".json");
    const auto manifest = nlohmann::json::parse(testing::read_file(json_path));
    const auto& expected = manifest.at("tensors");
    ASSERT_EQ(file.tensors().size(), expected.size());
    for (const auto& e : expected) {
      const auto* t = file.tensor(e.at("name").get<std::string>());
      ASSERT_NE(t, nullptr) << e.at("name");
      std::string type = e.at("type").get<std::string>();
      for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      EXPECT_EQ(dtype_name(t->view.dtype), type) << t->name;
      const auto ne = e.at("ne").get<std::vector<int64_t>>();
      ASSERT_EQ(t->view.shape.rank, static_cast<int>(ne.size()));
      for (size_t d = 0; d < ne.size(); ++d) EXPECT_EQ(t->view.shape[static_cast<int>(ne.size() - 1 - d)], ne[d]);
      seen.insert(t->view.dtype);
    }
    ++files;
  }
  EXPECT_EQ(files, 8);
  for (auto d : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K})
    EXPECT_TRUE(seen.count(d)) << dtype_name(d);
}

}  // namespace
}  // namespace lemma
