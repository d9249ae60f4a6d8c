// Dequantisation vs llama.cpp: every tensor of the golden GGUF files in shared/data/golden/quant is
// dequantised and its f32 bytes hashed; the sha256 must equal the one ggml's to_float produced.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lemma/io/gguf.h"
#include "lemma/kernels/dequantize.h"
#include "sha256.h"
#include "support/shared_data.h"

namespace lemma::kernels {
namespace {

TEST(Sha256, KnownDigests) {
  testing::Sha256 empty;
  EXPECT_EQ(empty.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  testing::Sha256 abc;
  abc.update("abc", 3);
  EXPECT_EQ(abc.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string long_input(1000, 'a');
  testing::Sha256 chunked;
  chunked.update(long_input.data(), 100);
  chunked.update(long_input.data() + 100, 900);
  testing::Sha256 whole;
  whole.update(long_input.data(), long_input.size());
  EXPECT_EQ(chunked.hex_digest(), whole.hex_digest());
}

TEST(DequantizeGolden, MatchesLlamaCppSha256) {
  const auto dir = lemma::testing::shared_data("golden/quant");
  LEMMA_REQUIRE_SHARED(dir);
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    const auto golden = nlohmann::json::parse(std::ifstream(entry.path()));
    const auto gguf_path = entry.path().parent_path() / entry.path().filename().replace_extension(".gguf");
    SCOPED_TRACE(gguf_path.string());
    ASSERT_TRUE(std::filesystem::exists(gguf_path));
    const GgufFile file = GgufFile::open(gguf_path.string());
    for (const auto& t : golden.at("tensors")) {
      const std::string name = t.at("name");
      const GgufTensor* tensor = file.tensor(name);
      ASSERT_NE(tensor, nullptr) << name;
      ASSERT_TRUE(can_dequantize(tensor->view.dtype)) << name << " " << dtype_name(tensor->view.dtype);
      std::vector<float> values(static_cast<size_t>(tensor->view.elements()));
      for (Isa isa : available_isas()) {  // every decoder this machine runs
        std::fill(values.begin(), values.end(), 0.0f);
        dequantize_fn(tensor->view.dtype, isa)(tensor->view.data, values.data(), tensor->view.elements());
        testing::Sha256 hash;
        hash.update(values.data(), values.size() * sizeof(float));
        EXPECT_EQ(hash.hex_digest(), t.at("dequant_f32_sha256").get<std::string>())
            << name << " (" << dtype_name(tensor->view.dtype) << ") on " << isa_name(isa);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace lemma::kernels
