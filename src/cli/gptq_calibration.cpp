#include "cli/runtime_flags.h"
#include "cli/gptq_calibration.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "lemma/base/error.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/model/linear_inputs.h"

namespace lemma::cli {

GptqHessians::GptqHessians(const ModelSource& source, std::vector<int32_t> tokens, int64_t context, int threads,
                           uint64_t budget_bytes)
    : model_(Model::open(source.path, LoadMode::kLazyMmap, runtime_options())), tokens_(std::move(tokens)), context_(context), threads_(threads),
      budget_(budget_bytes) {
  if (tokens_.empty()) fail<InvalidArgument>("--calibrate: the calibration text has no tokens");
  if (context_ <= 0) fail<InvalidArgument>("--calibrate: context {} must be positive", context_);
  const WeightFormat fmt = source.format == ModelFormat::kGguf ? WeightFormat::kGguf : WeightFormat::kHf;
  for (int64_t l = 0; l < model_.config().num_layers; ++l)
    for (const WeightRole role : kLayerMatrixRoles) inputs_[weight_name(fmt, role, l)] = {l, *linear_input_of(role)};
}

uint64_t GptqHessians::layer_bytes() const {
  uint64_t elements = 0;
  for (const LinearInput input : kLinearInputs) {
    const auto width = static_cast<uint64_t>(linear_input_width(model_.config(), input));
    elements += width * width;
  }
  return sizeof(double) * elements;
}

const quant::InputHessian* GptqHessians::for_tensor(const std::string& name) {
  const auto it = inputs_.find(name);
  if (it == inputs_.end()) return nullptr;
  const auto [layer, input] = it->second;
  if (layer < first_ || layer >= last_) gather(layer);
  return held_.at({layer, input}).get();
}

void GptqHessians::gather(int64_t first_layer) {
  const ModelConfig& c = model_.config();
  const uint64_t per_layer = layer_bytes();
  const int64_t count = std::clamp<int64_t>(static_cast<int64_t>(budget_ / per_layer), 1, c.num_layers - first_layer);
  held_.clear();
  first_ = first_layer;
  last_ = first_layer + count;
  for (int64_t l = first_; l < last_; ++l) {
    for (const LinearInput input : kLinearInputs)
      held_[{l, input}] = std::make_unique<quant::InputHessian>(linear_input_width(c, input));
  }
  ++passes_;
  std::fprintf(stderr, "GPTQ calibration pass %d: layers %lld..%lld of %lld, %lld tokens, %.1f MiB of Hessians\n", passes_,
               static_cast<long long>(first_), static_cast<long long>(last_ - 1), static_cast<long long>(c.num_layers),
               static_cast<long long>(tokens_.size()), static_cast<double>(per_layer * count) / (1 << 20));
  const auto start = std::chrono::steady_clock::now();
  const LinearInputObserver observer = [this](int64_t layer, LinearInput input, std::span<const float> x, int64_t rows, int64_t) {
    if (layer >= first_ && layer < last_) held_.at({layer, input})->add(x, rows);
  };
  for (size_t at = 0; at < tokens_.size(); at += static_cast<size_t>(context_)) {
    std::vector<int32_t> window(tokens_.begin() + static_cast<std::ptrdiff_t>(at),
                                tokens_.begin() + static_cast<std::ptrdiff_t>(std::min(tokens_.size(), at + context_)));
    if (c.bos_token_id) window[0] = *c.bos_token_id;
    observe_sequence(model_, window, threads_, observer);
  }
  std::fprintf(stderr, "GPTQ calibration pass %d: %.1f s\n", passes_,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace lemma::cli
