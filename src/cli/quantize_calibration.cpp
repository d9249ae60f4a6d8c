#include "cli/runtime_flags.h"
#include "cli/quantize_calibration.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "lemma/base/error.h"
#include "lemma/model/model.h"
#include "lemma/model/sequence_logits.h"
#include "lemma/model/weight_names.h"
#include "lemma/quant/smooth_quant.h"
#include "lemma/quant/tensor_to_f32.h"

namespace lemma::cli {

namespace {

WeightFormat format_of(const ModelSource& source) {
  return source.format == ModelFormat::kGguf ? WeightFormat::kGguf : WeightFormat::kHf;
}

std::optional<TensorView> source_tensor(const ModelSource& source, const std::string& name) {
  if (source.gguf) {
    if (const auto* t = source.gguf->tensor(name)) return t->view;
  } else if (source.safetensors) {
    if (const auto* t = source.safetensors->tensor(name)) return t->view;
  }
  return std::nullopt;
}

// max |logit_j| for j < hidden over every position of `tokens`, through `model`.
void record_head_inputs(const Model& model, const std::vector<int32_t>& tokens, int64_t context, int threads,
                        std::vector<float>& absmax) {
  const int64_t vocab = model.config().vocab_size, hidden = model.config().hidden_size;
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(context)) {
    std::vector<int32_t> window(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                                tokens.begin() + static_cast<std::ptrdiff_t>(std::min(tokens.size(), start + context)));
    if (model.config().bos_token_id) window[0] = *model.config().bos_token_id;
    const auto logits = sequence_logits(model, window, threads);
    for (size_t t = 0; t < window.size(); ++t)
      for (int64_t j = 0; j < hidden; ++j)
        absmax[static_cast<size_t>(j)] =
            std::max(absmax[static_cast<size_t>(j)], std::fabs(logits[t * static_cast<size_t>(vocab) + static_cast<size_t>(j)]));
  }
}

}  // namespace

NormOutputRanges calibrate_norm_outputs(const ModelSource& source, const std::vector<int32_t>& tokens, int64_t context,
                                        int num_threads) {
  if (tokens.empty()) fail<InvalidArgument>("--calibrate: the calibration text has no tokens");
  const Model full = Model::open(source.path, LoadMode::kLazyMmap, runtime_options());
  const ModelConfig& c = full.config();
  if (c.vocab_size < c.hidden_size)
    fail<Unsupported>("--calibrate needs vocab_size ({}) >= hidden_size ({})", c.vocab_size, c.hidden_size);
  const WeightFormat fmt = format_of(source);
  const int64_t H = c.hidden_size;
  std::vector<float> identity(static_cast<size_t>(c.vocab_size * H), 0.0f);
  for (int64_t j = 0; j < H; ++j) identity[static_cast<size_t>(j * H + j)] = 1.0f;
  const std::vector<float> zero_o(static_cast<size_t>(H * c.q_dim()), 0.0f);
  const std::vector<float> zero_down(static_cast<size_t>(H * c.intermediate_size), 0.0f);
  NormOutputRanges ranges;
  ranges.tokens = static_cast<int64_t>(tokens.size());
  for (int64_t l = 0; l < c.num_layers; ++l) {
    for (const bool attn : {true, false}) {
      ModelConfig cut = c;
      cut.num_layers = l + 1;
      cut.tie_word_embeddings = false;
      if (!cut.sliding_window.empty()) cut.sliding_window.resize(static_cast<size_t>(l + 1));
      std::map<std::string, TensorView> replaced = {
          {weight_name(fmt, WeightRole::kFinalNorm), *source_tensor(source, weight_name(fmt, attn ? WeightRole::kAttnNorm : WeightRole::kFfnNorm, l))},
          {weight_name(fmt, WeightRole::kLmHead), TensorView{identity.data(), DType::kF32, Shape{c.vocab_size, H}}},
          {weight_name(fmt, WeightRole::kDown, l), TensorView{zero_down.data(), DType::kF32, Shape{H, c.intermediate_size}}}};
      if (attn) replaced[weight_name(fmt, WeightRole::kO, l)] = TensorView{zero_o.data(), DType::kF32, Shape{H, c.q_dim()}};
      TensorLookup lookup = [&](const std::string& name) -> std::optional<TensorView> {
        if (const auto it = replaced.find(name); it != replaced.end()) return it->second;
        return source_tensor(source, name);
      };
      const Model model = Model::from_tensors(cut, fmt, lookup, nullptr, false, runtime_options());
      auto& out = (attn ? ranges.attn : ranges.ffn).emplace_back(static_cast<size_t>(H), 0.0f);
      record_head_inputs(model, tokens, context, num_threads, out);
    }
  }
  return ranges;
}

SmoothedTensors smooth_tensors(const ModelSource& source, const std::vector<quant::NamedTensor>& tensors,
                               const NormOutputRanges& ranges, float alpha) {
  const WeightFormat fmt = format_of(source);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < tensors.size(); ++i) index[tensors[i].name] = i;
  SmoothedTensors out;
  out.tensors = tensors;
  out.buffers.reserve(ranges.attn.size() * 7);
  float lo = INFINITY, hi = 0.0f;
  const auto smooth = [&](WeightRole norm_role, std::initializer_list<WeightRole> roles, int64_t l,
                          const std::vector<float>& x_absmax) {
    const int64_t H = static_cast<int64_t>(x_absmax.size());
    std::vector<std::pair<size_t, std::vector<float>>> mats;
    std::vector<float> w_absmax(static_cast<size_t>(H), 0.0f);
    for (const WeightRole role : roles) {
      const std::string name = weight_name(fmt, role, l);
      const auto it = index.find(name);
      if (it == index.end()) fail<FormatError>("--calibrate: missing tensor {}", name);
      const auto m = quant::matrix_shape(tensors[it->second].view.shape);
      if (m.cols != H) fail<FormatError>("--calibrate: {} has {} columns, expected {}", name, m.cols, H);
      auto values = quant::tensor_to_f32(tensors[it->second].view);
      quant::accumulate_column_absmax(values, m.rows, m.cols, w_absmax);
      mats.emplace_back(it->second, std::move(values));
    }
    const auto s = quant::smoothing_factors(x_absmax, w_absmax, alpha);
    lo = std::min(lo, *std::min_element(s.begin(), s.end()));
    hi = std::max(hi, *std::max_element(s.begin(), s.end()));
    for (auto& [i, values] : mats) {
      const auto m = quant::matrix_shape(tensors[i].view.shape);
      quant::scale_columns(values, m.rows, m.cols, s);
      auto& buffer = out.buffers.emplace_back(std::move(values));
      out.tensors[i].view = TensorView{buffer.data(), DType::kF32, tensors[i].view.shape};
    }
    const std::string norm_name = weight_name(fmt, norm_role, l);
    const size_t ni = index.at(norm_name);
    auto norm = quant::tensor_to_f32(tensors[ni].view);
    quant::divide_norm(norm, s);
    auto& buffer = out.buffers.emplace_back(std::move(norm));
    out.tensors[ni].view = TensorView{buffer.data(), DType::kF32, tensors[ni].view.shape};
  };
  for (int64_t l = 0; l < static_cast<int64_t>(ranges.attn.size()); ++l) {
    smooth(WeightRole::kAttnNorm, {WeightRole::kQ, WeightRole::kK, WeightRole::kV}, l, ranges.attn[static_cast<size_t>(l)]);
    smooth(WeightRole::kFfnNorm, {WeightRole::kGate, WeightRole::kUp}, l, ranges.ffn[static_cast<size_t>(l)]);
  }
  out.factor_range = {lo, hi};
  return out;
}

}  // namespace lemma::cli
