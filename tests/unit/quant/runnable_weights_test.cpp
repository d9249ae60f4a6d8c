// lemma int8/int4/W8A8 files run by the model: every spec is re-laid out into 32-value blocks the
// kernels read (symmetric -> Q8_0/Q4_0, asymmetric -> i8z32/i4z32, w8a8) with the same values
// (lossless); stories260K's perplexity from the file equals the dequantized-weights figure (W8A8:
// within its activation rounding) and stays within the gates.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/io/gguf.h"
#include "lemma/io/gguf_writer.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/model/config_from_gguf.h"
#include "lemma/model/config_from_hf.h"
#include "lemma/model/model.h"
#include "lemma/model/perplexity.h"
#include "lemma/quant/runnable_weights.h"
#include "lemma/quant/weight_quantizer.h"
#include "support/shared_data.h"
#include "tiny_preset.h"

namespace lemma::quant {
namespace {

using lemma::testing::build_scratch;
using lemma::testing::shared_data;

TEST(RunnableWeights, GgufBlockTwinsHoldTheSameValues) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 0.3f);
  std::vector<float> x(48 * 96);
  for (auto& v : x) v = dist(rng);
  for (const char* name : {"int8-g32-sym", "int4-g32-sym"}) {
    const auto spec = *parse_weight_quant_spec(name);
    const auto w = quantize_weight(x, 48, 96, spec);
    const auto blocks = to_gguf_blocks(w);
    const DType type = spec.bits == 8 ? DType::kQ8_0 : DType::kQ4_0;
    ASSERT_EQ(blocks.size(), *dtype_bytes(type, x.size()));
    std::vector<float> from_blocks(x.size());
    kernels::dequantize_row(type, blocks.data(), from_blocks.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(from_blocks, dequantize_weight(w)) << name;
  }
  EXPECT_THROW(to_gguf_blocks(quantize_weight(x, 48, 96, {4, false, 32})), InvalidArgument);
}

TEST(RunnableWeights, RuntimeBlocksHoldTheSameValuesForEverySpec) {
  std::mt19937 rng(6);
  std::normal_distribution<float> dist(0.1f, 0.3f);
  std::vector<float> x(12 * 256);
  for (auto& v : x) v = dist(rng);
  for (const char* name : {"int8-g32-sym", "int8-g64-asym", "int8-g128-sym", "int8-channel-sym", "int8-channel-asym",
                           "int4-g32-asym", "int4-g64-sym", "int4-g128-asym", "int4-channel-sym", "int4-channel-asym",
                           "w8a8"}) {
    const auto spec = *parse_weight_quant_spec(name);
    const auto w = quantize_weight(x, 12, 256, spec);
    const auto blocks = to_runtime_blocks(w);
    const DType type = served_dtype_for(spec);
    ASSERT_EQ(blocks.size(), *dtype_bytes(type, x.size())) << name;
    std::vector<float> from_blocks(x.size());
    kernels::dequantize_row(type, blocks.data(), from_blocks.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(from_blocks, dequantize_weight(w)) << name;
  }
  EXPECT_EQ(served_dtype_for(*parse_weight_quant_spec("int4-g64-asym")), DType::kI4Z32);
  EXPECT_EQ(served_dtype_for(*parse_weight_quant_spec("int8-channel-asym")), DType::kI8Z32);
  EXPECT_EQ(served_dtype_for(*parse_weight_quant_spec("w8a8")), DType::kW8A8);
  EXPECT_THROW(to_runtime_blocks(quantize_weight(std::vector<float>(4 * 48, 0.5f), 4, 48, {8, true, 0})),
               InvalidArgument);
}

const std::vector<int32_t>& ppl_tokens() {
  static const std::vector<int32_t> tokens = [] {
    const auto json = nlohmann::json::parse(lemma::testing::read_file(shared_data("golden/stories260K_perplexity.json")));
    return json.at("tokens").get<std::vector<int32_t>>();
  }();
  return tokens;
}

double perplexity_of(const Model& model) {
  PerplexityOptions options;
  options.context = 128;
  options.bos_token_id = 1;
  options.num_threads = 2;
  return compute_perplexity(model, ppl_tokens(), options).perplexity;
}

struct RunCase {
  const char* spec;
  DType served;
  double gate;  // relative to f32 (109.6400)
  double same;  // relative distance allowed to the dequantized-weights perplexity
};

class RunnableStories260K : public ::testing::TestWithParam<RunCase> {};

TEST_P(RunnableStories260K, PerplexityFromTheQuantizedFile) {
  const auto c = GetParam();
  const auto source_path = shared_data("models/stories260K/stories260K.gguf");
  LEMMA_REQUIRE_SHARED(source_path);
  LEMMA_REQUIRE_SHARED(shared_data("golden/stories260K_perplexity.json"));
  const auto source = GgufFile::open(source_path.string());
  const auto spec = *parse_weight_quant_spec(c.spec);
  std::vector<NamedTensor> tensors;
  for (const auto& t : source.tensors()) tensors.push_back({t.name, t.view});
  const auto quantized = quantize_weights(tensors, {spec, {}});
  const auto path = (build_scratch("quant") / ("run-stories260K-" + spec.to_string() + ".safetensors")).string();
  write_safetensors(path, quantized.tensors, quantized.metadata);

  const auto weights = RunnableWeights::open(path);
  EXPECT_EQ(weights.served_dtype(), c.served);
  ASSERT_TRUE(weights.find("blk.0.attn_q.weight"));
  EXPECT_EQ(weights.find("blk.0.attn_q.weight")->dtype, c.served);
  EXPECT_FALSE(weights.find("nope"));
  const Model model = Model::from_tensors(
      config_from_gguf(source), WeightFormat::kGguf,
      [&weights](const std::string& name) { return weights.find(name); }, weights.owner());
  const double ppl = perplexity_of(model);
  std::printf("stories260K ctx 128 from %s (served as %s): PPL %.4f\n", spec.to_string().c_str(),
              std::string(dtype_name(c.served)).c_str(), ppl);
  EXPECT_LE(std::abs(ppl / 109.64 - 1.0), c.gate);

  // The same weights dequantized (quantized_perplexity_test's method) give the same perplexity.
  GgufWriter writer;
  for (const auto& [key, value] : source.metadata()) writer.set(value);
  for (const auto& t : source.tensors()) {
    const auto view = *weights.find(t.name);
    if (view.dtype == t.view.dtype) {
      writer.add_tensor(t.name, view);
      continue;
    }
    std::vector<float> values(static_cast<size_t>(view.elements()));
    kernels::dequantize_row(view.dtype, view.data, values.data(), view.elements());
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    writer.add_tensor(t.name, DType::kF32, t.view.shape, bytes);
  }
  const auto f32_path = (build_scratch("quant") / ("run-stories260K-" + spec.to_string() + "-f32.gguf")).string();
  writer.write(f32_path);
  EXPECT_NEAR(perplexity_of(Model::open(f32_path)), ppl, c.same * ppl);
  // Rows that are not whole 32-value blocks (ffn_down: 172) are the only f32 ones.
  for (const auto& name : weights.widened()) EXPECT_NE(name.find("ffn_down"), std::string::npos) << name;
}

INSTANTIATE_TEST_SUITE_P(Specs, RunnableStories260K,
                         ::testing::Values(RunCase{"int8-g32-sym", DType::kQ8_0, 0.01, 1e-3},
                                           RunCase{"int4-g32-sym", DType::kQ4_0, 0.05, 1e-3},
                                           RunCase{"int8-channel-asym", DType::kI8Z32, 0.01, 1e-3},
                                           RunCase{"int8-channel-sym", DType::kQ8_0, 0.01, 1e-3},
                                           RunCase{"int4-g64-asym", DType::kI4Z32, 0.05, 1e-3},
                                           RunCase{"w8a8", DType::kW8A8, 0.01, 1e-2}),
                         [](const auto& info) {
                           std::string name = info.param.spec;
                           for (auto& ch : name) if (ch == '-') ch = '_';
                           return name;
                         });

TEST(RunnableWeights, RejectsPlainSafetensors) {
  std::vector<float> v(4, 1.0f);
  const std::vector<SafetensorsTensor> plain = {{"x", TensorView{v.data(), DType::kF32, Shape{4}}}};
  const auto path = (build_scratch("quant") / "run-plain.safetensors").string();
  write_safetensors(path, plain);
  EXPECT_THROW(RunnableWeights::open(path), FormatError);
}

}  // namespace
}  // namespace lemma::quant
