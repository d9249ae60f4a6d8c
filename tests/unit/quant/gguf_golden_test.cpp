// `quantize_gguf` against llama-quantize's files in shared/data/golden/quant/: the same per-tensor
// types from the same recipe, and every tensor's bytes equal (Q8_0/Q4_0 blocks bit for bit).
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/io/gguf.h"
#include "lemma/quant/gguf_quantizer.h"
#include "support/shared_data.h"
#include "tiny_preset.h"

namespace lemma::quant {
namespace {

namespace fs = std::filesystem;
using lemma::testing::build_scratch;
using lemma::testing::shared_data;

// Quantizes `source` and writes it to the scratch folder; returns the written file.
GgufFile quantize_to_scratch(const GgufFile& source, const GgufQuantizeOptions& options, const std::string& name) {
  const auto path = (build_scratch("quant") / name).string();
  quantize_gguf(source, options).write(path);
  return GgufFile::open(path);
}

// Every tensor of `golden` is in `ours` with the same type, shape and bytes; returns how many
// tensors were block-quantized (so a test can check that the comparison covered them).
int expect_same_tensors(const GgufFile& ours, const GgufFile& golden) {
  int quantized = 0;
  EXPECT_EQ(ours.tensors().size(), golden.tensors().size());
  for (const auto& g : golden.tensors()) {
    const auto* t = ours.tensor(g.name);
    if (!t) {
      ADD_FAILURE() << "missing " << g.name;
      continue;
    }
    EXPECT_EQ(dtype_name(t->view.dtype), dtype_name(g.view.dtype)) << g.name;
    EXPECT_EQ(t->view.shape, g.view.shape) << g.name;
    if (t->view.dtype != g.view.dtype || t->view.bytes() != g.view.bytes()) continue;
    EXPECT_EQ(std::memcmp(t->view.data, g.view.data, g.view.bytes()), 0) << g.name << " bytes differ";
    if (dtype_info(g.view.dtype).is_quantized) ++quantized;
  }
  return quantized;
}

struct GoldenCase {
  const char* golden;
  DType type;
  int quantized_tensors;
};

class Stories260KGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Stories260KGolden, SameTypesAndBlocksAsLlamaQuantize) {
  const auto c = GetParam();
  const auto source_path = shared_data("models/stories260K/stories260K.gguf");
  const auto golden_path = shared_data(std::string("golden/quant/") + c.golden);
  LEMMA_REQUIRE_SHARED(source_path);
  LEMMA_REQUIRE_SHARED(golden_path);
  const auto source = GgufFile::open(source_path.string());
  const auto golden = GgufFile::open(golden_path.string());
  GgufQuantizeOptions options;
  options.type = c.type;
  // The recipe alone gives llama-quantize's types (ffn_down, row length 172, stays f32).
  const auto plans = plan_gguf_quantization(source, options);
  for (const auto& p : plans) {
    const auto* g = golden.tensor(p.name);
    ASSERT_NE(g, nullptr) << p.name;
    EXPECT_EQ(dtype_name(p.to), dtype_name(g->view.dtype)) << p.name << " (" << p.reason << ")";
  }
  const auto ours = quantize_to_scratch(source, options, std::string("stories260K-") + c.golden);
  EXPECT_EQ(expect_same_tensors(ours, golden), c.quantized_tensors);
  EXPECT_EQ(ours.get_int("general.file_type"), golden.get_int("general.file_type"));
  EXPECT_EQ(ours.get_int("general.quantization_version"), golden.get_int("general.quantization_version"));
  // Same metadata, tensor order and alignment too: the whole file is llama-quantize's.
  const auto& a = ours.file();
  const auto& b = golden.file();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << "files differ";
}

INSTANTIATE_TEST_SUITE_P(Files, Stories260KGolden,
                         ::testing::Values(GoldenCase{"stories260K-Q8_0.gguf", DType::kQ8_0, 32},
                                           GoldenCase{"stories260K-Q4_0.gguf", DType::kQ4_0, 32}),
                         [](const auto& info) { return std::string(dtype_name(info.param.type)); });

// tiny-256 (every row a multiple of 256) made with `llama-quantize --pure`: all 16 matrices in the
// target type, so the output matrix is overridden to it.
class Tiny256Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Tiny256Golden, PureRecipeBlocksEqualLlamaQuantize) {
  const auto c = GetParam();
  const auto golden_path = shared_data(std::string("golden/quant/") + c.golden);
  LEMMA_REQUIRE_SHARED(golden_path);
  LEMMA_REQUIRE_SHARED(lemma::testing::shared_dir() / "tools" / "make_bench_model.py");
  std::string why;
  const auto dir = ensure_tiny_256(why);
  ASSERT_TRUE(dir) << why;
  const fs::path f32 = *dir / "tiny-256-f32.gguf";
  const auto source = GgufFile::open(f32.string());
  const auto golden = GgufFile::open(golden_path.string());
  GgufQuantizeOptions options;
  options.type = c.type;
  options.overrides.push_back({"^output\\.weight$", c.type});
  const auto ours = quantize_to_scratch(source, options, std::string("tiny-256-") + c.golden);
  EXPECT_EQ(expect_same_tensors(ours, golden), c.quantized_tensors);
  ASSERT_EQ(ours.file().size(), golden.file().size());
  EXPECT_EQ(std::memcmp(ours.file().data(), golden.file().data(), golden.file().size()), 0) << "files differ";
}

INSTANTIATE_TEST_SUITE_P(Files, Tiny256Golden,
                         ::testing::Values(GoldenCase{"tiny-256-Q8_0.gguf", DType::kQ8_0, 16},
                                           GoldenCase{"tiny-256-Q4_0.gguf", DType::kQ4_0, 16}),
                         [](const auto& info) { return std::string(dtype_name(info.param.type)); });

TEST(GgufQuantizePlan, OverridesAndErrors) {
  const auto source_path = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(source_path);
  const auto source = GgufFile::open(source_path.string());
  GgufQuantizeOptions options;
  options.type = DType::kQ4_0;
  options.overrides.push_back(parse_tensor_type_override("attn_q=f32"));
  options.overrides.push_back(parse_tensor_type_override("ffn_down=q8_0"));
  options.overrides.push_back(parse_tensor_type_override("output\\.weight=q4_0"));
  for (const auto& p : plan_gguf_quantization(source, options)) {
    if (p.name.find("attn_q") != std::string::npos) {
      EXPECT_EQ(p.to, DType::kF32) << p.name;
    }
    if (p.name.find("ffn_down") != std::string::npos) {
      EXPECT_EQ(p.to, DType::kF32) << p.name;  // 172 does not fill Q8_0 blocks: stays as stored
      EXPECT_NE(p.reason.find("172"), std::string::npos) << p.reason;
    }
    if (p.name == "output.weight") {
      EXPECT_EQ(p.to, DType::kQ4_0);
    }
    if (p.name.find("norm") != std::string::npos) {
      EXPECT_EQ(p.to, DType::kF32) << p.name;
    }
  }
  EXPECT_THROW(parse_tensor_type_override("attn_q"), InvalidArgument);
  EXPECT_THROW(parse_tensor_type_override("attn_q=q4_k"), InvalidArgument);
  EXPECT_THROW(parse_tensor_type_override("(=q8_0"), InvalidArgument);
  // IQ4_XS: rows of 64 are whole 32-value blocks but no 256-value one, so IQ4_NL (llama-quantize's
  // fallback); rows of 172 stay as stored; the output matrix is Q8_0 (no Q6_K quantizer).
  options.overrides.clear();
  options.type = DType::kIQ4_XS;
  for (const auto& p : plan_gguf_quantization(source, options)) {
    if (p.name.find("attn_q") != std::string::npos) {
      EXPECT_EQ(p.to, DType::kIQ4_NL) << p.name;
      EXPECT_NE(p.reason.find("256"), std::string::npos) << p.reason;
    }
    if (p.name.find("ffn_down") != std::string::npos) { EXPECT_EQ(p.to, DType::kF32) << p.name; }
    if (p.name == "output.weight") { EXPECT_EQ(p.to, DType::kQ8_0); }
  }
  EXPECT_EQ(parse_tensor_type_override("ffn=iq4_nl").type, DType::kIQ4_NL);
  options.type = DType::kQ4_K;
  EXPECT_THROW(plan_gguf_quantization(source, options), InvalidArgument);
}

}  // namespace
}  // namespace lemma::quant
