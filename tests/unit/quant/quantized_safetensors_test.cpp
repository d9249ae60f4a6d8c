// lemma int8/int4 checkpoints in safetensors: what quantize_weights keeps and quantizes, and that a
// written file reads back to the same codes, scales and zeros.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lemma/base/error.h"
#include "lemma/quant/quantized_safetensors.h"
#include "lemma/quant/weight_quantizer.h"
#include "support/shared_data.h"

namespace lemma::quant {
namespace {

struct Source {
  std::vector<float> q_proj, down_proj, norm;
  std::vector<NamedTensor> tensors() const {
    return {{"layers.0.q_proj.weight", TensorView{q_proj.data(), DType::kF32, Shape{64, 128}}},
            {"layers.0.down_proj.weight", TensorView{down_proj.data(), DType::kF32, Shape{64, 172}}},
            {"layers.0.norm.weight", TensorView{norm.data(), DType::kF32, Shape{64}}}};
  }
};

Source make_source() {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 0.1f);
  Source s;
  for (auto* v : {&s.q_proj, &s.down_proj, &s.norm}) {
    v->resize(v == &s.q_proj ? 64 * 128 : v == &s.down_proj ? 64 * 172 : 64);
    for (auto& x : *v) x = dist(rng);
  }
  return s;
}

class QuantizedSafetensors : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizedSafetensors, WritesAndReadsBack) {
  const auto spec = *parse_weight_quant_spec(GetParam());
  const Source source = make_source();
  const auto result = quantize_weights(source.tensors(), {spec, {}});
  ASSERT_EQ(result.plans.size(), 3u);
  EXPECT_TRUE(result.plans[0].quantized);
  // 172 is not a multiple of 32/64/128; per channel it fits.
  EXPECT_EQ(result.plans[1].quantized, spec.group_size == 0);
  EXPECT_FALSE(result.plans[2].quantized);
  EXPECT_LT(result.plans[0].bytes_after, result.plans[0].bytes_before / (spec.bits == 8 ? 3 : 6));

  const auto path = (lemma::testing::build_scratch("quant") / (spec.to_string() + ".safetensors")).string();
  write_safetensors(path, result.tensors, result.metadata);
  const auto file = SafetensorsFile::open(path);
  ASSERT_EQ(quantized_spec_of(file), spec);
  const auto bases = quantized_weight_bases(file);
  ASSERT_EQ(bases.size(), spec.group_size == 0 ? 2u : 1u);
  const auto back = read_quantized_weight(file, "layers.0.q_proj", spec);
  const auto& original = result.quantized[0];
  EXPECT_EQ(back.rows, 64);
  EXPECT_EQ(back.cols, 128);
  EXPECT_EQ(back.qweight, original.qweight);
  EXPECT_EQ(back.scales, original.scales);
  EXPECT_EQ(back.zeros, original.zeros);
  EXPECT_EQ(dequantize_weight(back), dequantize_weight(original));
  ASSERT_NE(file.tensor("layers.0.norm.weight"), nullptr);
  EXPECT_EQ(file.tensor("layers.0.norm.weight")->view.dtype, DType::kF32);
  EXPECT_EQ(file.tensor("layers.0.q_proj.weight"), nullptr);
  EXPECT_EQ(file.tensor("layers.0.q_proj.zeros") != nullptr, !spec.symmetric);
  if (spec.group_size != 0) {
    EXPECT_NE(file.tensor("layers.0.down_proj.weight"), nullptr);
  }
  // Read with the wrong spec: shapes or dtypes no longer match.
  WeightQuantSpec wrong = spec;
  wrong.group_size = spec.group_size == 32 ? 64 : 32;
  EXPECT_THROW(read_quantized_weight(file, "layers.0.q_proj", wrong), FormatError);
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedSafetensors,
                         ::testing::Values("int8-channel-sym", "int8-g128-asym", "int4-g32-sym", "int4-g64-asym",
                                           "int4-channel-asym"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (auto& c : name) if (c == '-') c = '_';
                           return name;
                         });

TEST(QuantizedSafetensorsMetadata, PlainFilesHaveNoSpecAndBadDeclarationsAreErrors) {
  const Source source = make_source();
  const auto tensors = source.tensors();
  const std::vector<SafetensorsTensor> plain = {{tensors[2].name, tensors[2].view}};
  const auto dir = lemma::testing::build_scratch("quant");
  write_safetensors((dir / "plain.safetensors").string(), plain);
  EXPECT_FALSE(quantized_spec_of(SafetensorsFile::open((dir / "plain.safetensors").string())));
  write_safetensors((dir / "bad.safetensors").string(), plain,
                    {{std::string(kQuantFormatKey), std::string(kQuantFormatValue)}, {std::string(kQuantSpecKey), "int5"}});
  EXPECT_THROW(quantized_spec_of(SafetensorsFile::open((dir / "bad.safetensors").string())), FormatError);
}

TEST(QuantizedSafetensorsMetadata, KeepPatternsLeaveTensorsAlone) {
  const Source source = make_source();
  const auto result = quantize_weights(source.tensors(), {{8, true, 0}, {"q_proj"}});
  EXPECT_FALSE(result.plans[0].quantized);
  EXPECT_TRUE(result.plans[1].quantized);
  EXPECT_THROW(quantize_weights(source.tensors(), {{8, true, 0}, {"("}}), InvalidArgument);
}

TEST(QuantizedSafetensorsMetadata, EmbeddingAndOutputStayUnlessAsked) {
  std::vector<float> m(64 * 64, 0.5f);
  const std::vector<NamedTensor> tensors = {
      {"model.embed_tokens.weight", TensorView{m.data(), DType::kF32, Shape{64, 64}}},
      {"lm_head.weight", TensorView{m.data(), DType::kF32, Shape{64, 64}}},
      {"output.weight", TensorView{m.data(), DType::kF32, Shape{64, 64}}},
      {"blk.0.attn_output.weight", TensorView{m.data(), DType::kF32, Shape{64, 64}}}};
  const auto kept = quantize_weights(tensors, {{4, true, 32}, {}});
  EXPECT_FALSE(kept.plans[0].quantized);
  EXPECT_FALSE(kept.plans[1].quantized);
  EXPECT_FALSE(kept.plans[2].quantized);
  EXPECT_TRUE(kept.plans[3].quantized);
  const auto all = quantize_weights(tensors, {{4, true, 32}, {}, true});
  for (const auto& p : all.plans) EXPECT_TRUE(p.quantized) << p.name;
}

}  // namespace
}  // namespace lemma::quant
