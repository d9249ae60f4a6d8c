// A sharded HF checkpoint (model.safetensors.index.json + two shards written from the tiny-qwen2
// preset's single file) loads through Model::open(dir) and gives the same logits as the single file.
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "golden_models.h"
#include "lemma/io/safetensors.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "support/shared_data.h"

namespace lemma::testing {
namespace {

namespace fs = std::filesystem;

TEST(ShardedCheckpoint, EqualsSingleFile) {
  std::string why;
  const auto files = ensure_preset("tiny-qwen2", why);
  if (!files) {
    if (running_in_ci()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  const fs::path dir = build_scratch("sharded-tiny-qwen2");
  fs::copy_file(files->hf_dir / "config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  const SafetensorsFile single = SafetensorsFile::open((files->hf_dir / "model.safetensors").string());
  std::vector<SafetensorsTensor> shard[2];
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (size_t i = 0; i < single.tensors().size(); ++i) {
    const auto& t = single.tensors()[i];
    const size_t s = i % 2;
    shard[s].push_back(t);
    index["weight_map"][t.name] = fmt::format("model-{:05d}-of-00002.safetensors", s + 1);
  }
  for (size_t s = 0; s < 2; ++s)
    write_safetensors((dir / fmt::format("model-{:05d}-of-00002.safetensors", s + 1)).string(), shard[s]);
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();

  const Model sharded = Model::open(dir);
  const Model whole = Model::open(files->hf_dir);
  const std::vector<int32_t> tokens = {510, 449, 495, 305, 403, 50, 308};
  EXPECT_EQ(sequence_logits(sharded, tokens), sequence_logits(whole, tokens));
}

}  // namespace
}  // namespace lemma::testing
