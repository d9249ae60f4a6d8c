// GPTQ / AWQ / FP8 Hugging Face checkpoints written by lemma's packers and opened by Model::open
// (issue 6 item 4, G18), on the tiny-256 preset (HF directory): every converted weight holds exactly
// the packer's quantization (bit for bit), the model's logits equal those of an f32 model holding the
// dequantized weights (within the activation precision's rounding), and corrupt
// checkpoints (missing tensors, wrong shapes, unsupported bits) fail naming the tensor or field.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lemma/base/error.h"
#include "lemma/io/safetensors_checkpoint.h"
#include "lemma/kernels/dequantize.h"
#include "lemma/kernels/float_bits.h"
#include "lemma/kernels/interleaved_blocks.h"
#include "lemma/kernels/isa.h"
#include "lemma/kernels/kernel_policy.h"
#include "lemma/model/interleaved_weights.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/quant/fp8_weight.h"
#include "lemma/quant/grouped_int_weight.h"
#include "lemma/quant/hf_quant_packer.h"
#include "lemma/quant/hf_quantized_weights.h"
#include "lemma/quant/tensor_to_f32.h"
#include "support/shared_data.h"
#include "tiny_preset.h"

namespace lemma::quant {
namespace {

namespace fs = std::filesystem;
using lemma::testing::build_scratch;

struct Source {
  fs::path hf;
  SafetensorsCheckpoint checkpoint;
  std::vector<NamedTensor> tensors;
};

const Source* tiny_source(std::string& why) {
  static std::unique_ptr<Source> source;
  if (source) return source.get();
  const auto dir = ensure_tiny_256(why);
  if (!dir) return nullptr;
  source.reset(new Source{*dir / "hf", SafetensorsCheckpoint::open((*dir / "hf" / "model.safetensors").string()), {}});
  for (const auto* t : source->checkpoint.tensors()) source->tensors.push_back({t->name, t->view});
  return source.get();
}

// An HF directory holding `tensors` (default: the packer's output) and config.json with `quant`.
fs::path write_checkpoint(const Source& src, const std::string& name, const nlohmann::json& quant,
                          const std::vector<SafetensorsTensor>& tensors) {
  const fs::path dir = build_scratch("quant") / ("hf-ckpt-" + name);
  fs::create_directories(dir);
  std::ifstream in(src.hf / "config.json");
  auto config = nlohmann::json::parse(in);
  config["quantization_config"] = quant;
  std::ofstream(dir / "config.json") << config.dump(2);
  write_safetensors((dir / "model.safetensors").string(), tensors, {{"format", "pt"}});
  return dir;
}

std::vector<float> values_of(const TensorView& v) {
  std::vector<float> out(static_cast<size_t>(v.elements()));
  kernels::dequantize_row(v.dtype, v.data, out.data(), v.elements());
  return out;
}

// What the packer's quantization of `w` dequantizes to (computed here from the f32 weight; act-order
// with the checkpoint's g_idx, whose choice the packer test checks).
std::vector<float> expected_values(const HfQuantConfig& c, const std::vector<float>& w, int64_t n, int64_t k,
                                   std::vector<int32_t> g_idx) {
  if (c.method == HfQuantMethod::kFp8) {
    const auto bf16 = fp8_to_bf16(quantize_fp8(w, n, k, c.fp8_block));
    std::vector<float> out;
    for (const auto b : bf16) out.push_back(kernels::bf16_to_f32(b));
    return out;
  }
  if (c.method == HfQuantMethod::kAwq) return dequantize_grouped(quantize_grouped(w, n, k, 4, c.group_size, GroupRounding::kAwq));
  return dequantize_grouped(quantize_grouped(w, n, k, c.bits, c.group_size,
                                             c.sym ? GroupRounding::kGptqSym : GroupRounding::kGptqAsym, g_idx));
}

struct FormatCase {
  const char* type;
  DType served;  // dtype of the converted matrices
};

// rms(a - b) / rms(a).
double relative_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += a[i] * a[i];
  }
  return std::sqrt(diff / ref);
}

// How closely the quantized model must follow an f32 model holding its dequantized weights: the
// matmul reads the served dtype directly, with the activation precision the kernel registry picks
// (kernels/kernel_policy.h). f32 activations differ only in summation order; Q4_0/Q8_0 with int8
// activations and bf16 with bf16 activations round x, which on tiny-256 (large init std, README of
// golden/quant: 4-8% of max|logit| even for Q8_0) moves logits by a few percent.
double reference_bound(DType served) {
  // The dtype the matmuls really run: Model re-lays interleavable matrices (tiny-256's K are whole blocks).
  const kernels::MatrixFormat run =
      interleaving_enabled(served, {}) ? kernels::interleaved(served) : kernels::MatrixFormat(served);
  const auto precision = kernels::default_matmul_precision(run, kernels::detected_isa());
  return precision == kernels::MatmulPrecision::kF32Activations ? 1e-4 : 0.1;
}

class HfCheckpoint : public ::testing::TestWithParam<FormatCase> {};

// GPTQ act-order orders a matrix's inputs by its input's Hessian diagonal, so q/k/v (and gate/up)
// share one g_idx; the packer's stand-in score is max |W[:, k]| over the matrices sharing the input.
void expect_shared_act_order(const Source& src, const HfQuantizedCheckpoint& packed, int64_t group_size) {
  const auto tensor = [](const auto& tensors, const std::string& name) {
    const auto it = std::find_if(tensors.begin(), tensors.end(), [&](const auto& t) { return t.name == name; });
    if (it == tensors.end()) throw std::runtime_error("no tensor " + name);
    return it->view;
  };
  const auto g_idx = [&](const std::string& base) {
    const TensorView v = tensor(packed.tensors, base + ".g_idx");
    const auto* g = static_cast<const int32_t*>(v.data);
    return std::vector<int32_t>(g, g + v.shape[0]);
  };
  for (int layer = 0; layer < 2; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    for (const auto& members : {std::vector<std::string>{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
                                std::vector<std::string>{"mlp.gate_proj", "mlp.up_proj"}}) {
      std::vector<float> score;
      for (const auto& m : members) {
        const TensorView w = tensor(src.tensors, prefix + m + ".weight");
        const auto values = tensor_to_f32(w);
        const int64_t N = w.shape[0], K = w.shape[1];
        score.resize(static_cast<size_t>(K), 0.0f);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < K; ++k)
            score[static_cast<size_t>(k)] = std::max(score[static_cast<size_t>(k)], std::abs(values[static_cast<size_t>(n * K + k)]));
      }
      const auto want = act_order_g_idx(score, group_size);
      for (const auto& m : members) EXPECT_EQ(g_idx(prefix + m), want) << prefix + m;
    }
  }
}

TEST_P(HfCheckpoint, LoadsThePackersWeightsAndRunsCloseToF32) {
  std::string why;
  const Source* src = tiny_source(why);
  ASSERT_TRUE(src) << why;
  const auto c = GetParam();
  const auto config = *parse_hf_quant_type(c.type);
  const auto packed = pack_hf_checkpoint(src->tensors, config, {});
  if (config.desc_act) expect_shared_act_order(*src, packed, config.group_size);
  const fs::path dir = write_checkpoint(*src, c.type, to_json(config), packed.tensors);
  // Bit for bit: each converted weight is the packer's quantization of the f32 weight.
  const auto weights = HfQuantizedWeights::open((dir / "model.safetensors").string(), config);
  EXPECT_EQ(weights.converted().size(), 2u * 7u) << "tiny-256 has 2 layers of 7 matrices";
  std::map<std::string, std::vector<float>> dequantized;
  // Act-order matrices come with their inputs sorted by group (column j holds input order[j]).
  EXPECT_EQ(weights.reordered().size(), config.desc_act ? weights.converted().size() : 0u);
  for (const auto& name : weights.converted()) {
    const auto view = *weights.find(name);
    EXPECT_EQ(view.dtype, c.served) << name;
    const auto* original = src->checkpoint.tensor(name);
    ASSERT_NE(original, nullptr) << name;
    const auto m = matrix_shape(original->view.shape);
    const std::string base = name.substr(0, name.size() - std::string(".weight").size());
    std::vector<int32_t> g_idx;
    if (config.desc_act) {
      const auto it = std::find_if(packed.tensors.begin(), packed.tensors.end(),
                                   [&](const auto& t) { return t.name == base + ".g_idx"; });
      ASSERT_NE(it, packed.tensors.end()) << base;
      const auto* g = static_cast<const int32_t*>(it->view.data);
      g_idx.assign(g, g + m.cols);
    }
    auto expected = expected_values(config, tensor_to_f32(original->view), m.rows, m.cols, std::move(g_idx));
    auto values = values_of(view);
    if (const auto order = weights.find(base + std::string(kInputOrderSuffix))) {
      ASSERT_EQ(order->dtype, DType::kI32);
      ASSERT_EQ(order->shape, Shape{m.cols});
      const auto* o = static_cast<const int32_t*>(order->data);
      std::vector<float> stored_order(values.size());
      for (int64_t r = 0; r < m.rows; ++r)
        for (int64_t j = 0; j < m.cols; ++j) stored_order[static_cast<size_t>(r * m.cols + o[j])] = values[static_cast<size_t>(r * m.cols + j)];
      values = std::move(stored_order);
    }
    ASSERT_EQ(values, expected) << name;
    dequantized[name] = std::move(expected);
  }
  // The oracle: an unquantized checkpoint holding those dequantized values in f32.
  std::vector<SafetensorsTensor> reference_tensors;
  for (const auto& t : src->tensors) {
    const auto it = dequantized.find(t.name);
    reference_tensors.push_back(it == dequantized.end() ? SafetensorsTensor{t.name, t.view}
                                                        : SafetensorsTensor{t.name, {it->second.data(), DType::kF32, t.view.shape}});
  }
  const fs::path reference_dir = write_checkpoint(*src, std::string(c.type) + "-dequantized", nullptr, reference_tensors);
  // The model from the directory against that oracle, and (a figure only) against the f32 model:
  // tiny-256's random weights have no redundancy, so 4-bit formats move its logits by ~50%.
  const std::vector<int32_t> tokens = {1, 17, 42, 99, 3, 250, 7, 128, 64, 5, 33, 200, 11, 90, 2, 77};
  const auto f32 = sequence_logits(Model::open(src->hf), tokens, 2);
  const auto reference = sequence_logits(Model::open(reference_dir), tokens, 2);
  const auto quantized = sequence_logits(Model::open(dir), tokens, 2);
  const double vs_reference = relative_rms(reference, quantized), vs_f32 = relative_rms(f32, quantized);
  std::printf("tiny-256 %s: relative rms logit error %.2e vs its dequantized weights in f32, %.4f vs the f32 model\n",
              c.type, vs_reference, vs_f32);
  EXPECT_LE(vs_reference, reference_bound(c.served));
  EXPECT_GT(vs_f32, 0.0);  // the weights did change
}

INSTANTIATE_TEST_SUITE_P(Formats, HfCheckpoint,
                         ::testing::Values(FormatCase{"gptq-g32-sym", DType::kQ4_0},
                                           FormatCase{"gptq-g64-asym", DType::kI4Z32},
                                           FormatCase{"gptq-g128-sym-act", DType::kQ4_0},
                                           FormatCase{"gptq-g32-asym-act", DType::kI4Z32},
                                           FormatCase{"gptq8-g64-sym-act", DType::kQ8_0},
                                           FormatCase{"gptq-channel-asym", DType::kI4Z32},
                                           FormatCase{"gptq8-g32-asym", DType::kI8Z32},
                                           FormatCase{"gptq8-channel-sym", DType::kQ8_0},
                                           FormatCase{"awq-g32", DType::kI4Z32},
                                           FormatCase{"awq-g128", DType::kI4Z32},
                                           FormatCase{"fp8", DType::kBF16},
                                           FormatCase{"fp8-block128", DType::kBF16}),
                         [](const auto& info) {
                           std::string name = info.param.type;
                           for (auto& ch : name) if (ch == '-') ch = '_';
                           return name;
                         });

// A corrupt checkpoint fails at Model::open with the tensor's (or field's) name.
void expect_open_error(const fs::path& dir, const std::string& needle) {
  try {
    Model::open(dir);
    ADD_FAILURE() << "opened " << dir << "; expected an error naming " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

std::vector<SafetensorsTensor> without(const std::vector<SafetensorsTensor>& tensors, const std::string& name) {
  std::vector<SafetensorsTensor> out;
  for (const auto& t : tensors)
    if (t.name != name) out.push_back(t);
  return out;
}

TEST(HfCheckpointErrors, CorruptCheckpointsNameWhatIsWrong) {
  std::string why;
  const Source* src = tiny_source(why);
  ASSERT_TRUE(src) << why;
  const auto gptq = *parse_hf_quant_type("gptq-g32-asym");
  const auto packed = pack_hf_checkpoint(src->tensors, gptq, {});
  const std::string q = "model.layers.1.self_attn.q_proj";
  expect_open_error(write_checkpoint(*src, "no-qzeros", to_json(gptq), without(packed.tensors, q + ".qzeros")),
                    q + ".qzeros");
  expect_open_error(write_checkpoint(*src, "no-qweight", to_json(gptq), without(packed.tensors, q + ".qweight")),
                    q + ".qweight");
  auto wrong = packed.tensors;
  for (auto& t : wrong)
    if (t.name == q + ".scales") t.view.shape = Shape{t.view.shape[1], t.view.shape[0]};
  expect_open_error(write_checkpoint(*src, "wrong-scales", to_json(gptq), wrong), q + ".scales");
  auto bits3 = to_json(gptq);
  bits3["bits"] = 3;
  expect_open_error(write_checkpoint(*src, "bits3", bits3, packed.tensors), "bits 3");
  auto v2 = to_json(gptq);
  v2["checkpoint_format"] = "gptq_v2";
  expect_open_error(write_checkpoint(*src, "v2", v2, packed.tensors), "gptq_v2");
  // A GPTQ config over AWQ tensors: qweight is [K, N / 8], so the scales do not match.
  const auto awq = pack_hf_checkpoint(src->tensors, *parse_hf_quant_type("awq-g32"), {});
  expect_open_error(write_checkpoint(*src, "awq-as-gptq", to_json(gptq), awq.tensors), ".scales");
  const auto fp8 = *parse_hf_quant_type("fp8-block128");
  const auto fp8_packed = pack_hf_checkpoint(src->tensors, fp8, {});
  const std::string up = "model.layers.1.mlp.up_proj";
  expect_open_error(write_checkpoint(*src, "fp8-no-scale", to_json(fp8), without(fp8_packed.tensors, up + ".weight_scale_inv")),
                    up + ".weight_scale_inv");
  auto e5m2 = to_json(fp8);
  e5m2["fmt"] = "e5m2";
  expect_open_error(write_checkpoint(*src, "fp8-e5m2", e5m2, fp8_packed.tensors), "e5m2");
}

}  // namespace
}  // namespace lemma::quant
