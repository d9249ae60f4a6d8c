// `lemma quantize` driven as a user would: GGUF outputs equal llama-quantize's files, int8/int4
// outputs (file and HF directory) read back, and bad requests fail with exit code 1 and a message.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <tuple>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lemma/io/safetensors.h"
#include "lemma/quant/quantized_safetensors.h"
#include "lemma_cli.h"
#include "support/shared_data.h"
#include "tiny_preset.h"

namespace lemma::quant {
namespace {

namespace fs = std::filesystem;
using lemma::testing::build_scratch;
using lemma::testing::read_file;
using lemma::testing::shared_data;

TEST(QuantizeCli, GgufOutputsEqualLlamaQuantizeFiles) {
  const auto source = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(source);
  for (const std::string type : {"q8_0", "q4_0"}) {
    const auto golden = shared_data("golden/quant/stories260K-" + std::string(type == "q8_0" ? "Q8_0" : "Q4_0") + ".gguf");
    LEMMA_REQUIRE_SHARED(golden);
    const auto out = build_scratch("quant") / ("cli-stories260K-" + type + ".gguf");
    const auto run = lemma("quantize --model " + source.string() + " --out " + out.string() + " --type " + type);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(read_file(out), read_file(golden)) << type;
    EXPECT_NE(run.err.find("[ 48/48]"), std::string::npos) << run.err;  // one progress line per tensor
    EXPECT_NE(run.err.find("blk.0.ffn_down.weight"), std::string::npos);
    EXPECT_NE(run.out.find("file bytes: 1185376 -> " + std::to_string(fs::file_size(golden))), std::string::npos)
        << run.out;
  }
}

// IQ4_NL / IQ4_XS: llama.cpp's file types (25, 30), IQ4_XS's fallback shown by inspect, and the
// file runs.
TEST(QuantizeCli, Iq4FilesCarryLlamaFileTypesAndRun) {
  const auto source = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(source);
  for (const auto& [type, file_type] : {std::pair<std::string, std::string>{"iq4_nl", "25"}, {"iq4_xs", "30"}}) {
    const auto out = build_scratch("quant") / ("cli-stories260K-" + type + ".gguf");
    const auto run = lemma("quantize --model " + source.string() + " --out " + out.string() + " --type " + type);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto inspect = lemma("inspect --model " + out.string());
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    EXPECT_NE(inspect.out.find("general.file_type = " + file_type), std::string::npos) << inspect.out;
    EXPECT_NE(inspect.out.find("iq4_nl"), std::string::npos) << inspect.out;  // rows of 64: IQ4_NL either way
    const auto generated = lemma("generate --model " + out.string() + " --prompt Once -n 8 --temperature 0");
    EXPECT_EQ(generated.exit_code, 0) << generated.err;
    EXPECT_FALSE(generated.out.empty());
  }
}

// f16 / bf16 outputs (every 2-D weight rounded to nearest even, 1-D tensors kept): llama.cpp's file
// types 1 / 32, and perplexity within rounding of f32's (109.6400).
TEST(QuantizeCli, F16AndBf16FilesCarryLlamaFileTypesAndRun) {
  const auto source = shared_data("models/stories260K/stories260K.gguf");
  const auto text = shared_data("golden/ppl-input.txt");
  LEMMA_REQUIRE_SHARED(source);
  LEMMA_REQUIRE_SHARED(text);
  for (const auto& [type, file_type, gate] : {std::tuple<std::string, std::string, double>{"f16", "1", 1e-3}, {"bf16", "32", 1e-2}}) {
    const auto out = build_scratch("quant") / ("cli-stories260K-" + type + ".gguf");
    const auto run = lemma("quantize --model " + source.string() + " --out " + out.string() + " --type " + type);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto inspect = lemma("inspect --model " + out.string());
    EXPECT_NE(inspect.out.find("general.file_type = " + file_type), std::string::npos) << inspect.out;
    EXPECT_NE(inspect.out.find("blk.0.attn_q.weight                              " + type), std::string::npos) << inspect.out;
    const auto ppl = lemma("perplexity -m " + out.string() + " -f " + text.string() + " --ctx 128 --threads 2 --kv-cache-dtype f32");
    ASSERT_EQ(ppl.exit_code, 0) << ppl.err;
    const double value = std::stod(ppl.out.substr(ppl.out.rfind("PPL = ") + 6));
    std::printf("stories260K %s PPL %.4f\n", type.c_str(), value);
    EXPECT_LT(std::abs(value / 109.6400 - 1.0), gate) << type;
  }
}

TEST(QuantizeCli, Int4SafetensorsFileReadsBack) {
  const auto source = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(source);
  const auto out = build_scratch("quant") / "cli-stories260K-int4.safetensors";
  const auto run = lemma("quantize -m " + source.string() + " -o " + out.string() + " -t int4 --group-size 32 --asym");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto file = SafetensorsFile::open(out.string());
  const WeightQuantSpec spec{4, false, 32};
  ASSERT_EQ(quantized_spec_of(file), spec);
  // 5 layers x (q, k, v, o, gate, up); ffn_down (row length 172) and the embedding/output stay f32.
  EXPECT_EQ(quantized_weight_bases(file).size(), 30u);
  EXPECT_EQ(read_quantized_weight(file, "blk.0.attn_q", spec).cols, 64);
  ASSERT_NE(file.tensor("blk.0.ffn_down.weight"), nullptr);
  EXPECT_EQ(file.tensor("blk.0.ffn_down.weight")->view.dtype, DType::kF32);
  EXPECT_NE(run.out.find("model bytes: 1185376 -> " + std::to_string(fs::file_size(out))), std::string::npos) << run.out;
}

TEST(QuantizeCli, HfDirectoryInGivesHfDirectoryOut) {
  LEMMA_REQUIRE_SHARED(lemma::testing::shared_dir() / "tools" / "make_bench_model.py");
  std::string why;
  const auto dir = ensure_tiny_256(why);
  ASSERT_TRUE(dir) << why;
  const fs::path hf = *dir / "hf";
  const auto out = build_scratch("quant") / "cli-tiny-256-int8";
  const auto run = lemma("quantize -m " + hf.string() + " -o " + out.string() + " -t int8-g64");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto config = nlohmann::json::parse(read_file(out / "config.json"));
  EXPECT_EQ(config.at("quantization_config").at("bits"), 8);
  EXPECT_EQ(config.at("quantization_config").at("group_size"), 64);
  EXPECT_EQ(config.at("quantization_config").at("sym"), true);
  EXPECT_EQ(config.at("hidden_size"), 256);
  EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
  const auto file = SafetensorsFile::open((out / "model.safetensors").string());
  EXPECT_EQ(quantized_spec_of(file), (WeightQuantSpec{8, true, 64}));
  EXPECT_EQ(quantized_weight_bases(file).size(), 14u);  // 2 layers x 7 matrices
}

TEST(QuantizeCli, BadRequestsFailWithAMessage) {
  const auto source = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(source);
  const auto out = build_scratch("quant") / "cli-never-written";
  auto run = lemma("quantize -m " + source.string() + " -o " + out.string() + ".gguf -t q5_1");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("unknown --type 'q5_1'"), std::string::npos) << run.err;
  run = lemma("quantize -m " + source.string() + " -o " + out.string() + " -t int8");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("needs an HF directory input"), std::string::npos) << run.err;
  run = lemma("quantize -m " + source.string() + " -o " + out.string() + ".safetensors -t int4 --group-size 48");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("group size"), std::string::npos) << run.err;
  run = lemma("quantize -m " + source.string() + " -o " + out.string() + ".gguf -t q8_0 --tensor-type attn=q3_k");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("q3_k"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(out.string() + ".gguf"));
  EXPECT_FALSE(fs::exists(out.string() + ".safetensors"));
}

}  // namespace
}  // namespace lemma::quant
