// Issue 6's second accuracy measure: mean KL divergence KL(f32 || quantized) of tiny-256's
// next-token distributions over golden/quant's len64 sequence (its logits are sharp enough to show
// quantization errors; init std 0.125 makes the model very sensitive). Reported and bounded.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lemma/io/gguf.h"
#include "lemma/io/gguf_writer.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/model/linear_inputs.h"
#include "lemma/quant/gptq.h"
#include "lemma/quant/gguf_quantizer.h"
#include "lemma/quant/weight_quantizer.h"
#include "support/shared_data.h"
#include "tiny_preset.h"

namespace lemma::quant {
namespace {

namespace fs = std::filesystem;
using lemma::testing::build_scratch;
using lemma::testing::shared_data;

std::vector<float> all_logits(const std::string& path, const std::vector<int32_t>& tokens) {
  return sequence_logits(Model::open(path), tokens);
}

// Mean over positions of KL(p || q), p and q the softmax of each row (natural log).
double mean_kl(const std::vector<float>& p_logits, const std::vector<float>& q_logits, size_t vocab) {
  const size_t rows = p_logits.size() / vocab;
  double total = 0;
  for (size_t r = 0; r < rows; ++r) {
    const float* p = p_logits.data() + r * vocab;
    const float* q = q_logits.data() + r * vocab;
    double pmax = p[0], qmax = q[0];
    for (size_t v = 0; v < vocab; ++v) pmax = std::max<double>(pmax, p[v]), qmax = std::max<double>(qmax, q[v]);
    double pz = 0, qz = 0;
    for (size_t v = 0; v < vocab; ++v) pz += std::exp(p[v] - pmax), qz += std::exp(q[v] - qmax);
    double kl = 0;
    for (size_t v = 0; v < vocab; ++v) {
      const double lp = p[v] - pmax - std::log(pz), lq = q[v] - qmax - std::log(qz);
      kl += std::exp(lp) * (lp - lq);
    }
    total += kl;
  }
  return total / static_cast<double>(rows);
}

// GPTQ's Hessians for tiny-256 (quant/gptq.h), by tensor name: its forward observed over 1024
// tokens drawn at random (a random-weight model has no text of its own; the scored sequence is
// not among them). q/k/v and gate/up share their input's.
struct TinyHessians {
  std::map<std::pair<int64_t, LinearInput>, std::unique_ptr<InputHessian>> by_input;
  std::map<std::string, const InputHessian*> by_name;
};

TinyHessians tiny_hessians(const std::string& path) {
  const Model model = Model::open(path);
  const ModelConfig& c = model.config();
  TinyHessians h;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    for (const WeightRole role : kLayerMatrixRoles) {
      const LinearInput input = *linear_input_of(role);
      auto& slot = h.by_input[{l, input}];
      if (!slot) slot = std::make_unique<InputHessian>(linear_input_width(c, input));
      h.by_name[weight_name(WeightFormat::kGguf, role, l)] = slot.get();
    }
  }
  std::mt19937 rng(5);
  for (int window = 0; window < 8; ++window) {
    std::vector<int32_t> tokens(128);
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(c.vocab_size));
    observe_sequence(model, tokens, 2, [&](int64_t layer, LinearInput input, std::span<const float> x, int64_t rows, int64_t) {
      h.by_input.at({layer, input})->add(x, rows);
    });
  }
  return h;
}

struct KlCase {
  const char* format;  // q8_0, q4_0, iq4_nl, iq4_xs (GGUF files) or a lemma int spec (dequantized into f32)
  double bound;
  bool gptq = false;   // lemma int spec quantized by GPTQ (tiny_hessians)
};

class Tiny256Kl : public ::testing::TestWithParam<KlCase> {};

TEST_P(Tiny256Kl, MeanKlDivergenceFromF32IsBounded) {
  const auto c = GetParam();
  const auto golden = shared_data("golden/quant/tiny-256-Q4_0.json");
  LEMMA_REQUIRE_SHARED(golden);
  LEMMA_REQUIRE_SHARED(lemma::testing::shared_dir() / "tools" / "make_bench_model.py");
  std::string why;
  const auto dir = ensure_tiny_256(why);
  ASSERT_TRUE(dir) << why;
  const auto json = nlohmann::json::parse(lemma::testing::read_file(golden));
  const auto tokens = json.at("sequences").at(1).at("tokens").get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 64u);
  const std::string f32_path = (*dir / "tiny-256-f32.gguf").string();
  const auto source = GgufFile::open(f32_path);
  const std::string format = c.format;
  const std::string out = (build_scratch("quant") / ("tiny-256-kl-" + format + (c.gptq ? "-gptq" : "") + ".gguf")).string();
  if (format == "q8_0" || format == "q4_0" || format == "iq4_nl" || format == "iq4_xs") {
    GgufQuantizeOptions options;
    options.type = format == "q8_0" ? DType::kQ8_0 : format == "q4_0" ? DType::kQ4_0 : format == "iq4_nl" ? DType::kIQ4_NL : DType::kIQ4_XS;
    quantize_gguf(source, options).write(out);
  } else {
    std::vector<NamedTensor> tensors;
    for (const auto& t : source.tensors()) tensors.push_back({t.name, t.view});
    TinyHessians hessians;
    GptqCalibration calibration;
    if (c.gptq) {
      hessians = tiny_hessians(f32_path);
      calibration.hessian = [&](const std::string& name) -> const InputHessian* {
        const auto it = hessians.by_name.find(name);
        return it == hessians.by_name.end() ? nullptr : it->second;
      };
      calibration.threads = 2;
    }
    const auto result = quantize_weights(tensors, {*parse_weight_quant_spec(format), {}}, {}, calibration);
    GgufWriter writer;
    for (const auto& [key, value] : source.metadata()) writer.set(value);
    size_t next = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!result.plans[i].quantized) {
        writer.add_tensor(tensors[i].name, tensors[i].view);
        continue;
      }
      const auto values = dequantize_weight(result.quantized[next++]);
      std::vector<uint8_t> bytes(values.size() * sizeof(float));
      std::memcpy(bytes.data(), values.data(), bytes.size());
      writer.add_tensor(tensors[i].name, DType::kF32, tensors[i].view.shape, bytes);
    }
    writer.write(out);
  }
  const auto base = all_logits(f32_path, tokens);
  const auto quantized = all_logits(out, tokens);
  const double kl = mean_kl(base, quantized, base.size() / tokens.size());
  std::printf("tiny-256 len64: mean KL(f32 || %s%s) = %.3g nats\n", c.format, c.gptq ? ", GPTQ" : "", kl);
  EXPECT_GT(kl, 0.0);
  EXPECT_LE(kl, c.bound);
}

INSTANTIATE_TEST_SUITE_P(Formats, Tiny256Kl,
                         // Measured (nats): q8_0 0.0064 with its default int8 activations (0.0038 under
                         // LEMMA_MATMUL_PRECISION=f32), int8-channel-sym 0.0034, int8-g128-asym 0.0026; q4_0 0.75,
                         // int4-g32-sym 0.48, int4-g128-sym 0.63, int4-g128-asym 0.58. Bounds: ~1.5-3x / ~1.4x those.
                         // GPTQ (random-token calibration): int4-g128-sym 0.635, int4-g128-asym 0.467,
                         // int8-channel-sym 0.0036: a random-weight model's inputs are nearly uncorrelated, so
                         // GPTQ has little to compensate through (H close to diagonal: round to nearest).
                         ::testing::Values(KlCase{"q8_0", 0.01}, KlCase{"q4_0", 1.0}, KlCase{"iq4_nl", 1.0}, KlCase{"iq4_xs", 1.0},
                                           KlCase{"int8-channel-sym", 0.01},
                                           KlCase{"int8-g128-asym", 0.01}, KlCase{"int4-g32-sym", 1.0},
                                           KlCase{"int4-g128-sym", 1.0}, KlCase{"int4-g128-asym", 1.0},
                                           KlCase{"int4-g128-sym", 1.0, true}, KlCase{"int4-g128-asym", 1.0, true},
                                           KlCase{"int8-channel-sym", 0.01, true}),
                         [](const auto& info) {
                           std::string name = std::string(info.param.format) + (info.param.gptq ? "_gptq" : "");
                           for (auto& ch : name) if (ch == '-') ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace lemma::quant
