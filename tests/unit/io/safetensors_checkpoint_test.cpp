#include "lemma/io/safetensors_checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "lemma/base/error.h"
#include "support/shared_data.h"

namespace lemma {
namespace {

namespace fs = std::filesystem;

struct Weights {
  std::vector<float> embed = std::vector<float>(8 * 4);
  std::vector<float> norm = std::vector<float>(4);
  std::vector<uint16_t> proj = std::vector<uint16_t>(4 * 4);
  Weights() {
    for (size_t i = 0; i < embed.size(); ++i) embed[i] = static_cast<float>(i) * 0.5f;
    for (size_t i = 0; i < norm.size(); ++i) norm[i] = 1.0f + static_cast<float>(i);
    for (size_t i = 0; i < proj.size(); ++i) proj[i] = static_cast<uint16_t>(0x3c00 + i);
  }
  SafetensorsTensor embed_t() const { return {"model.embed.weight", {embed.data(), DType::kF32, Shape{8, 4}}}; }
  SafetensorsTensor norm_t() const { return {"model.norm.weight", {norm.data(), DType::kF32, Shape{4}}}; }
  SafetensorsTensor proj_t() const { return {"model.proj.weight", {proj.data(), DType::kF16, Shape{4, 4}}}; }
};

fs::path fresh_dir(const std::string& name) {
  const auto dir = testing::build_scratch("io") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// model-0000{1,2}-of-00002.safetensors + index, the way Hugging Face shards checkpoints.
fs::path make_sharded(const std::string& name, const Weights& w, const std::string& weight_map) {
  const auto dir = fresh_dir(name);
  const std::vector<SafetensorsTensor> s1{w.embed_t(), w.norm_t()};
  const std::vector<SafetensorsTensor> s2{w.proj_t()};
  write_safetensors((dir / "model-00001-of-00002.safetensors").string(), s1);
  write_safetensors((dir / "model-00002-of-00002.safetensors").string(), s2);
  write_text(dir / "model.safetensors.index.json",
             R"({"metadata":{"total_size":176},"weight_map":)" + weight_map + "}");
  return dir;
}

const std::string kGoodMap =
    R"({"model.embed.weight":"model-00001-of-00002.safetensors",)"
    R"("model.norm.weight":"model-00001-of-00002.safetensors",)"
    R"("model.proj.weight":"model-00002-of-00002.safetensors"})";

std::string open_error(const std::string& path) {
  try {
    SafetensorsCheckpoint::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(SafetensorsCheckpoint, SingleAndShardedGiveIdenticalTensors) {
  const Weights w;
  const auto single_dir = fresh_dir("ckpt_single");
  const std::vector<SafetensorsTensor> all{w.embed_t(), w.norm_t(), w.proj_t()};
  write_safetensors((single_dir / "model.safetensors").string(), all);
  const auto sharded_dir = make_sharded("ckpt_sharded", w, kGoodMap);

  const auto single = SafetensorsCheckpoint::open(single_dir.string());
  const auto sharded = SafetensorsCheckpoint::open(sharded_dir.string(), LoadMode::kCopy);
  EXPECT_TRUE(single.index_path().empty());
  EXPECT_EQ(sharded.shards().size(), 2u);
  ASSERT_EQ(single.size(), 3u);
  ASSERT_EQ(sharded.size(), 3u);
  EXPECT_EQ(single.total_bytes(), 8u * 4 * 4 + 4 * 4 + 4 * 4 * 2);
  EXPECT_EQ(sharded.total_bytes(), single.total_bytes());
  EXPECT_GE(sharded.load_seconds(), 0.0);
  for (const auto* t : single.tensors()) {
    const auto* u = sharded.tensor(t->name);
    ASSERT_NE(u, nullptr) << t->name;
    EXPECT_EQ(u->view.dtype, t->view.dtype);
    EXPECT_EQ(u->view.shape, t->view.shape);
    ASSERT_EQ(u->view.bytes(), t->view.bytes());
    EXPECT_EQ(std::memcmp(u->view.data, t->view.data, t->view.bytes()), 0) << t->name;
  }
  EXPECT_EQ(sharded.tensor("model.proj.weight")->view.as<uint16_t>()[5], 0x3c05);
  // The index file and a lone shard open too.
  EXPECT_EQ(SafetensorsCheckpoint::open((sharded_dir / "model.safetensors.index.json").string()).size(), 3u);
  EXPECT_EQ(SafetensorsCheckpoint::open((sharded_dir / "model-00002-of-00002.safetensors").string()).size(), 1u);
}

TEST(SafetensorsCheckpoint, MissingShardIsNamed) {
  const auto dir = make_sharded("ckpt_missing", Weights{}, kGoodMap);
  fs::remove(dir / "model-00002-of-00002.safetensors");
  const auto message = open_error(dir.string());
  EXPECT_NE(message.find("model.safetensors.index.json"), std::string::npos) << message;
  EXPECT_NE(message.find("shard 'model-00002-of-00002.safetensors' is missing"), std::string::npos) << message;
}

TEST(SafetensorsCheckpoint, WeightMapEntryMustBeInItsShard) {
  const auto dir = make_sharded("ckpt_wrong_shard", Weights{},
                                R"({"model.embed.weight":"model-00002-of-00002.safetensors",)"
                                R"("model.proj.weight":"model-00002-of-00002.safetensors"})");
  // model-00001 is then never opened, so embed is simply absent from the named shard.
  const auto message = open_error(dir.string());
  EXPECT_NE(message.find("weight_map puts 'model.embed.weight' in model-00002-of-00002.safetensors"),
            std::string::npos)
      << message;
}

TEST(SafetensorsCheckpoint, NoTensorInTwoShards) {
  const Weights w;
  const auto dir = make_sharded("ckpt_twice", w, kGoodMap);
  const std::vector<SafetensorsTensor> s2{w.proj_t(), w.norm_t()};
  write_safetensors((dir / "model-00002-of-00002.safetensors").string(), s2);
  const auto message = open_error(dir.string());
  EXPECT_NE(message.find("tensor 'model.norm.weight' appears in two shards"), std::string::npos) << message;
}

TEST(SafetensorsCheckpoint, HostileIndexes) {
  const auto dir = make_sharded("ckpt_escape", Weights{}, R"({"x":"../../etc/passwd"})");
  EXPECT_NE(open_error(dir.string()).find("outside the checkpoint directory"), std::string::npos);
  write_text(dir / "model.safetensors.index.json", R"({"weight_map":[]})");
  EXPECT_NE(open_error(dir.string()).find("\"weight_map\" object"), std::string::npos);
  write_text(dir / "model.safetensors.index.json", R"({"weight_map":{"a":"x","a":"y"}})");
  EXPECT_NE(open_error(dir.string()).find("duplicate key 'a'"), std::string::npos);
  write_text(dir / "model.safetensors.index.json", R"({"weight_map":{"a":3}})");
  EXPECT_NE(open_error(dir.string()).find("weight_map['a'] must be a file name"), std::string::npos);
  write_text(dir / "model.safetensors.index.json", "{");
  EXPECT_NE(open_error(dir.string()).find("invalid JSON"), std::string::npos);
  const auto empty = fresh_dir("ckpt_empty");
  EXPECT_NE(open_error(empty.string()).find("no model.safetensors.index.json or model.safetensors"),
            std::string::npos);
}

}  // namespace
}  // namespace lemma
