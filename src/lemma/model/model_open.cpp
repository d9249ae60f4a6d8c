// Model::open: picks the file format from the path and wires the format's tensor lookup into
// Model::from_tensors. The opened file is kept alive by the Model (its views point into it).
// A file declaring lemma.quant.format (lemma int8/int4/W8A8, safetensors or GGUF) is served by
// quant::RunnableWeights: its packed weights re-laid out into the blocks the kernels read.
#include <memory>

#include "lemma/base/error.h"
#include "lemma/base/logging.h"
#include "lemma/io/gguf.h"
#include "lemma/io/safetensors_checkpoint.h"
#include "lemma/model/config_from_gguf.h"
#include "lemma/model/config_from_hf.h"
#include "lemma/model/model.h"
#include "lemma/quant/hf_quantized_weights.h"
#include "lemma/quant/quantized_safetensors.h"
#include "lemma/quant/runnable_weights.h"

namespace lemma {

namespace {

Model open_lemma_quantized(ModelConfig config, WeightFormat format, const std::filesystem::path& weights,
                           LoadMode mode, const RuntimeOptions& rt) {
  auto runnable = std::make_shared<const quant::RunnableWeights>(quant::RunnableWeights::open(weights.string(), mode));
  log().info("{}: lemma {} weights served as {}{}", weights.string(), runnable->spec().to_string(),
             dtype_name(runnable->served_dtype()),
             runnable->widened().empty() ? "" : fmt::format(" ({} in f32: rows not whole 32-value blocks)",
                                                            runnable->widened().size()));
  const quant::RunnableWeights* r = runnable.get();
  TensorLookup lookup = [r](const std::string& name) { return r->find(name); };
  return Model::from_tensors(std::move(config), format, lookup, std::move(runnable), false, rt);
}

// GPTQ/AWQ/FP8 (an HF directory's config.json quantization_config, or lemma's GGUF container of them).
Model open_hf_quantized(ModelConfig config, WeightFormat format, const std::filesystem::path& weights,
                        const std::optional<quant::HfQuantConfig>& quant_config, LoadMode mode,
                        const RuntimeOptions& rt) {
  auto hf = std::make_shared<const quant::HfQuantizedWeights>(
      quant::HfQuantizedWeights::open(weights.string(), quant_config, mode));
  log().info("{}: {} weights: {} converted{}{}", weights.string(), hf->config().to_string(), hf->converted().size(),
             hf->reordered().empty() ? ""
                                     : fmt::format(" ({} act-order: inputs sorted by group, read in that order)",
                                                   hf->reordered().size()),
             hf->widened().empty() ? "" : fmt::format(" ({} in f32: groups not whole 32-value blocks)", hf->widened().size()));
  const quant::HfQuantizedWeights* r = hf.get();
  TensorLookup lookup = [r](const std::string& name) { return r->find(name); };
  return Model::from_tensors(std::move(config), format, lookup, std::move(hf), false, rt);
}

Model open_gguf(const std::filesystem::path& path, LoadMode mode, const RuntimeOptions& rt) {
  auto file = std::make_shared<GgufFile>(GgufFile::open(path.string(), mode));
  ModelConfig config = config_from_gguf(*file);
  if (file->get_string(std::string(quant::kQuantFormatKey))) {
    return open_lemma_quantized(std::move(config), WeightFormat::kGguf, path, mode, rt);
  }
  if (file->get_string(std::string(quant::kHfQuantConfigKey))) {
    return open_hf_quantized(std::move(config), WeightFormat::kGguf, path, std::nullopt, mode, rt);
  }
  const GgufFile* f = file.get();
  TensorLookup lookup = [f](const std::string& name) -> std::optional<TensorView> {
    const GgufTensor* t = f->tensor(name);
    if (!t) return std::nullopt;
    return t->view;
  };
  // The file is this model's alone: matrices it re-lays at load may hand their source pages back.
  return Model::from_tensors(std::move(config), WeightFormat::kGguf, lookup, std::move(file), /*owns_sources=*/true, rt);
}

Model open_hf(const std::filesystem::path& dir, const std::filesystem::path& weights, LoadMode mode,
              const RuntimeOptions& rt) {
  ModelConfig config = config_from_hf_file(dir / "config.json");
  if (auto q = quant::hf_quant_config_of_file(dir / "config.json")) {
    return open_hf_quantized(std::move(config), WeightFormat::kHf, weights, q, mode, rt);
  }
  const auto single = weights.extension() == ".safetensors" ? weights : weights / "model.safetensors";
  if (std::filesystem::is_regular_file(single) && quant::is_lemma_quantized_file(single.string())) {
    return open_lemma_quantized(std::move(config), WeightFormat::kHf, single, mode, rt);
  }
  auto file = std::make_shared<SafetensorsCheckpoint>(SafetensorsCheckpoint::open(weights.string(), mode));
  const SafetensorsCheckpoint* f = file.get();
  TensorLookup lookup = [f](const std::string& name) -> std::optional<TensorView> {
    const SafetensorsTensor* t = f->tensor(name);
    if (!t) return std::nullopt;
    return t->view;
  };
  // As for GGUF: the checkpoint is this model's alone, so interleaved matrices' sources go back to the OS.
  return Model::from_tensors(std::move(config), WeightFormat::kHf, lookup, std::move(file), /*owns_sources=*/true, rt);
}

}  // namespace

namespace {
Model open_any(const std::filesystem::path& path, LoadMode mode, const RuntimeOptions& rt) {
  if (std::filesystem::is_directory(path)) return open_hf(path, path, mode, rt);
  if (path.extension() == ".safetensors" || path.filename() == "model.safetensors.index.json")
    return open_hf(path.parent_path(), path, mode, rt);
  if (path.filename() == "config.json") return open_hf(path.parent_path(), path.parent_path(), mode, rt);
  return open_gguf(path, mode, rt);
}
}  // namespace

Model Model::open(const std::filesystem::path& path, LoadMode mode, const RuntimeOptions& runtime) {
  Model model = open_any(path, mode, runtime);
  log().info("loaded {} ({}, {}): {}", path.string(), to_string(model.format()), to_string(mode),
             model.config().summary());
  return model;
}

}  // namespace lemma
